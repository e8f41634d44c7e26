// Package text holds the string helpers that CAPTF's manager and runner
// share: cutting a string to a byte budget (a condition message, an event
// note, a field of the runner's result document) without splitting a UTF-8
// sequence. It imports nothing of CAPTF's, so every package may use it.
package text
