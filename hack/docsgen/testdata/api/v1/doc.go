// Package v1 is a small API that exercises every rendering rule of docsgen.
//
// +groupName=example.captf.io
package v1
