// Package site tests the book's website: Hugo builds docs/site (the pages
// of docs/book) into a temporary folder, a file server serves it on
// 127.0.0.1, and one headless Chromium opens every page. A test fails on a
// link to a page that was not built, an anchor that is not on its page, an
// image that does not load, a console error or uncaught exception, a
// sub-resource that answers 404 (or any error), and a request that leaves
// the site. It also lints the book's Markdown and checks that README.md,
// the table of contents the site's navigation is made from, lists every
// page.
package site
