package main

import (
	"reflect"
	"testing"
)

// groups: binaries named alike (go test -c -o dir/ names each after its
// package's last element) go to different groups; packages without tests
// are left out; the order is kept.
func TestGroups(t *testing.T) {
	pkgs := []*pkg{
		{ImportPath: "m/test/lifecycle", Tests: true},
		{ImportPath: "m/internal/decide", Tests: true},
		{ImportPath: "m/cmd/manager"},
		{ImportPath: "m/internal/lifecycle", Tests: true},
		{ImportPath: "m/x/lifecycle", Tests: true},
		{ImportPath: "m/internal/state", Tests: true},
	}
	var got [][]string
	for _, g := range groups(pkgs) {
		var names []string
		for _, p := range g {
			names = append(names, p.ImportPath)
		}
		got = append(got, names)
	}
	want := [][]string{
		{"m/test/lifecycle", "m/internal/decide", "m/internal/state"},
		{"m/internal/lifecycle"},
		{"m/x/lifecycle"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("groups = %v, want %v", got, want)
	}
}
