package lint

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/pflag"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

// Version is tfcapi-lint's version, stamped at release time with
// -ldflags "-X github.com/captf-io/cluster-api-provider-terraform/internal/lint.Version=v0.1.0".
// When it is not stamped, the main module's version from the build
// information is used (go install ...@v0.1.0 records it), else "dev".
var Version = ""

// version returns the version tfcapi-lint reports.
func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// Contracts lists the contract versions tfcapi-lint lints against.
func Contracts() []string { return []string{contract.Version} }

const usageText = `tfcapi-lint checks a CAPTF module, or the OCI image built from it, against
the module contract and the image contract; it also tests a module's
outputs offline and scaffolds new modules.

Usage:
  tfcapi-lint module <module-dir> --role <role> [flags]
  tfcapi-lint image <image-ref> --role <role> [flags]
  tfcapi-lint test <module-dir> --role <role> [flags]
  tfcapi-lint init <module-dir> --role <role>
  tfcapi-lint version [--json]
  tfcapi-lint --version

Exit codes: 0 clean, 1 findings (errors; with --strict warnings too) or
failed contract-test scenarios, 2 module unparsable, image unpullable,
runtime failure or scaffold files already present, 3 usage error.
`

// Formats of the report.
const (
	FormatText  = "text"
	FormatJSON  = "json"
	FormatSARIF = "sarif"
)

type commonFlags struct {
	role     string
	contract string
	json     bool
	format   string
	strict   bool
	allow    []string
}

func (c *commonFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.role, "role", "", "the role the module implements: cluster, machine or machinepool (required)")
	fs.StringVar(&c.contract, "contract", contract.Version, "the contract version to lint against")
	fs.BoolVar(&c.json, "json", false, "print the report as JSON (same as --format json)")
	fs.StringVar(&c.format, "format", FormatText, "report format: text, json or sarif")
	fs.BoolVar(&c.strict, "strict", false, "fail (exit 1) on warnings as well as errors")
	fs.StringSliceVar(&c.allow, "allow-warning", nil, "downgrade a check's warnings to info (repeatable, or a comma-separated list); never touches errors")
}

func (c *commonFlags) resolve() (contract.Role, string, error) {
	format := c.format
	if c.json {
		if format != FormatText && format != FormatJSON {
			return "", "", usageErrorf("--json and --format %s disagree", format)
		}
		format = FormatJSON
	}
	switch format {
	case FormatText, FormatJSON, FormatSARIF:
	default:
		return "", "", usageErrorf("--format %q: want text, json or sarif", format)
	}
	if c.role == "" {
		return "", "", usageErrorf("--role is required: cluster, machine or machinepool")
	}
	role, err := contract.ParseRole(c.role)
	if err != nil {
		return "", "", usageErrorf("--role: %v", err)
	}
	if c.contract != contract.Version {
		return "", "", usageErrorf("--contract %q is not supported: this tfcapi-lint lints %s", c.contract, strings.Join(Contracts(), ", "))
	}
	for _, id := range c.allow {
		if _, ok := checkByID(id); !ok {
			return "", "", usageErrorf("--allow-warning %q: no check has that ID", id)
		}
	}
	return role, format, nil
}

func newFlagSet(name string, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	return fs
}

// Main runs tfcapi-lint with the arguments (without the program name) and
// returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return ExitUsage
	}
	switch args[0] {
	case "--version", "-version":
		if len(args) != 1 {
			return usage(stderr, usageErrorf("--version takes no arguments"))
		}
		fmt.Fprintf(stdout, "tfcapi-lint %s\n", version())
		return ExitOK
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usageText)
		return ExitOK
	case "version":
		return runVersion(args[1:], stdout, stderr)
	case "module":
		return runModule(args[1:], stdout, stderr)
	case "image":
		return runImage(args[1:], stdout, stderr)
	case "test":
		return runTest(args[1:], stdout, stderr)
	case "init":
		return runInit(args[1:], stdout, stderr)
	}
	return usage(stderr, usageErrorf("unknown command %q: want module, image, test, init or version", args[0]))
}

func usage(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "tfcapi-lint: %v\n", err)
	return ExitUsage
}

// parse parses the flags; help is ExitOK, anything else wrong ExitUsage.
func parse(fs *pflag.FlagSet, args []string, stdout, stderr io.Writer) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return ExitOK, false
		}
		return usage(stderr, err), false
	}
	return 0, true
}

// parseArg parses the flags of a subcommand that takes exactly one
// argument (a module directory, an image reference) and returns it.
func parseArg(fs *pflag.FlagSet, args []string, command, what string, stdout, stderr io.Writer) (string, int, bool) {
	if code, ok := parse(fs, args, stdout, stderr); !ok {
		return "", code, false
	}
	if fs.NArg() != 1 {
		return "", usage(stderr, usageErrorf("%s takes one %s, got %d arguments", command, what, fs.NArg())), false
	}
	return fs.Arg(0), 0, true
}

func versionFlags(stderr io.Writer) (*pflag.FlagSet, *bool) {
	fs := newFlagSet("version", stderr)
	return fs, fs.Bool("json", false, "print the version and the supported contracts as JSON")
}

func moduleFlags(stderr io.Writer) (*pflag.FlagSet, *commonFlags) {
	fs := newFlagSet("module", stderr)
	c := &commonFlags{}
	c.register(fs)
	return fs, c
}

func imageFlags(stderr io.Writer) (fs *pflag.FlagSet, c *commonFlags, platform *string, all, insecure *bool) {
	fs, c = moduleFlags(stderr)
	platform = fs.String("platform", DefaultPlatform, "the platform of a multi-platform image to check (os/arch[/variant])")
	all = fs.Bool("all-platforms", false, "check every platform the image publishes")
	insecure = fs.Bool("insecure", false, "reach the registry over plain HTTP")
	return fs, c, platform, all, insecure
}

// Subcommands lists tfcapi-lint's subcommands.
func Subcommands() []string { return []string{"module", "image", "test", "init", "version"} }

// Flags returns the flag set of a subcommand (module, image, test, init or
// version),
// as its command line parses it; nil for another name.
func Flags(subcommand string) *pflag.FlagSet {
	switch subcommand {
	case "module":
		fs, _ := moduleFlags(io.Discard)
		return fs
	case "image":
		fs, _, _, _, _ := imageFlags(io.Discard)
		return fs
	case "test":
		fs, _, _ := testFlagSet(io.Discard)
		return fs
	case "init":
		fs, _ := initFlagSet(io.Discard)
		return fs
	case "version":
		fs, _ := versionFlags(io.Discard)
		return fs
	}
	return nil
}

func runVersion(args []string, stdout, stderr io.Writer) int {
	fs, asJSON := versionFlags(stderr)
	if code, ok := parse(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return usage(stderr, usageErrorf("version takes no arguments"))
	}
	if *asJSON {
		b, _ := json.MarshalIndent(struct {
			Version   string   `json:"version"`
			Contracts []string `json:"contracts"`
		}{version(), Contracts()}, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
		return ExitOK
	}
	fmt.Fprintf(stdout, "tfcapi-lint %s (contracts: %s)\n", version(), strings.Join(Contracts(), ", "))
	return ExitOK
}

func runModule(args []string, stdout, stderr io.Writer) int {
	fs, c := moduleFlags(stderr)
	dir, code, ok := parseArg(fs, args, "module", "module directory", stdout, stderr)
	if !ok {
		return code
	}
	role, format, err := c.resolve()
	if err != nil {
		return usage(stderr, err)
	}
	r, err := LintModule(dir, ModuleOptions{Role: role, Contract: c.contract, AllowWarnings: c.allow})
	return finish(r, err, format, c.strict, stdout, stderr)
}

func runImage(args []string, stdout, stderr io.Writer) int {
	fs, c, platform, all, insecure := imageFlags(stderr)
	ref, code, ok := parseArg(fs, args, "image", "image reference", stdout, stderr)
	if !ok {
		return code
	}
	role, format, err := c.resolve()
	if err != nil {
		return usage(stderr, err)
	}
	if *all && fs.Changed("platform") {
		return usage(stderr, usageErrorf("--platform and --all-platforms exclude each other"))
	}
	o := ImageOptions{
		Role: role, Contract: c.contract, AllowWarnings: c.allow,
		Platform: *platform, PlatformSet: fs.Changed("platform"), AllPlatforms: *all, Insecure: *insecure,
	}
	r, err := LintImage(ref, o)
	return finish(r, err, format, c.strict, stdout, stderr)
}

// finish prints the report (or the error) and returns the exit code.
func finish(r *Report, err error, format string, strict bool, stdout, stderr io.Writer) int {
	if err != nil {
		var ue *UsageError
		if errors.As(err, &ue) {
			return usage(stderr, err)
		}
		fmt.Fprintf(stderr, "tfcapi-lint: %v\n", err)
		return ExitUnparsable
	}
	var werr error
	switch format {
	case FormatJSON:
		werr = WriteJSON(stdout, r)
	case FormatSARIF:
		werr = WriteSARIF(stdout, r)
	default:
		werr = WriteText(stdout, r)
	}
	if werr != nil {
		fmt.Fprintf(stderr, "tfcapi-lint: writing the report: %v\n", werr)
		return ExitUnparsable
	}
	return r.ExitCode(strict)
}
