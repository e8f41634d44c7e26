// Package docs runs the book's Getting Started pages (Quick Start, Your
// First Module) as a reader does: every ```sh block of each page, as
// written and in order, in one shell at the root of the repository, on the
// local environment `make dev` starts. Its test then checks, through the
// API, the outcomes the pages promise.
package docs
