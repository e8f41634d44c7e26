module github.com/captf-io/cluster-api-provider-terraform/hack/tools/vale

go 1.26.0

require github.com/vale-cli/vale/v3 v3.26.0

require (
	dario.cat/mergo v1.0.1 // indirect
	github.com/BurntSushi/toml v0.3.1 // indirect
	github.com/Masterminds/goutils v1.1.1 // indirect
	github.com/Masterminds/semver/v3 v3.3.1 // indirect
	github.com/Masterminds/sprig/v3 v3.3.0 // indirect
	github.com/adrg/frontmatter v0.2.0 // indirect
	github.com/adrg/strutil v0.3.1 // indirect
	github.com/adrg/xdg v0.5.3 // indirect
	github.com/andybalholm/cascadia v1.3.6-0.20260923003020-d56114046656 // indirect
	github.com/atomicgo/cursor v0.0.1 // indirect
	github.com/bmatcuk/doublestar/v4 v4.7.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/clipperhouse/displaywidth v0.10.0 // indirect
	github.com/clipperhouse/uax29/v2 v2.6.0 // indirect
	github.com/d5/tengo/v2 v2.17.0 // indirect
	github.com/dlclark/regexp2/v2 v2.5.2 // indirect
	github.com/errata-ai/ini v1.63.0 // indirect
	github.com/expr-lang/expr v1.17.7 // indirect
	github.com/fatih/color v1.18.0 // indirect
	github.com/gobwas/glob v0.2.3 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/gookit/color v1.5.4 // indirect
	github.com/huandu/xstrings v1.5.0 // indirect
	github.com/jdkato/go-tree-sitter-julia v0.1.0 // indirect
	github.com/jdkato/prose/v3 v3.2.2 // indirect
	github.com/jdkato/regexp2/v2 v2.5.6 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/mattn/go-runewidth v0.0.19 // indirect
	github.com/mitchellh/copystructure v1.2.0 // indirect
	github.com/mitchellh/mapstructure v1.5.0 // indirect
	github.com/mitchellh/reflectwalk v1.0.2 // indirect
	github.com/niklasfasching/go-org v1.7.0 // indirect
	github.com/olekukonko/cat v0.0.0-20250911104152-50322a0618f6 // indirect
	github.com/olekukonko/errors v1.2.0 // indirect
	github.com/olekukonko/ll v0.1.6 // indirect
	github.com/olekukonko/tablewriter v1.1.4 // indirect
	github.com/otiai10/copy v1.14.0 // indirect
	github.com/pelletier/go-toml/v2 v2.2.5-0.20250826075308-a0e846496753 // indirect
	github.com/pterm/pterm v0.12.40 // indirect
	github.com/remeh/sizedwaitgroup v1.0.0 // indirect
	github.com/sergi/go-diff v1.4.5 // indirect
	github.com/shopspring/decimal v1.4.0 // indirect
	github.com/smacker/go-tree-sitter v0.0.0-20240827094217-dd81d9e9be82 // indirect
	github.com/spf13/cast v1.7.1 // indirect
	github.com/spf13/pflag v1.0.5 // indirect
	github.com/tomwright/dasel/v2 v2.8.1 // indirect
	github.com/tomwright/dasel/v3 v3.11.2 // indirect
	github.com/xo/terminfo v0.0.0-20220910002029-abceb7e1c41e // indirect
	github.com/yuin/goldmark v1.8.6 // indirect
	golang.org/x/crypto v0.55.0 // indirect
	golang.org/x/exp v0.0.0-20250106191152-7588d65b2ba8 // indirect
	golang.org/x/net v0.57.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/term v0.45.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	gopkg.in/neurosnap/sentences.v1 v1.0.7 // indirect
	gopkg.in/yaml.v2 v2.4.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

// Vale's go.mod names a pseudo-version of cascadia that the module proxy
// does not serve; v1.3.5, its latest release, builds the same command.
replace github.com/andybalholm/cascadia => github.com/andybalholm/cascadia v1.3.5
