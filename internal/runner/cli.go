package runner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // --logging-format=json, as the manager
	"k8s.io/klog/v2"
)

// Version is the runner's version, set at build time with
// -ldflags "-X github.com/captf-io/cluster-api-provider-terraform/internal/runner.Version=<v>";
// otherwise the module version from the build information.
var Version = ""

// version returns the runner's version string.
func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

const usage = `Usage: runner [global flags] <command> [flags]

Commands:
  copy <dest>   copy this binary to <dest> (the Job's init container)
  run           run one operation (--op apply|destroy|refresh|drift|plan|restore)
  version       print the version

Global flags are the logging flags (-v, --vmodule, --logging-format, ...) and --version.
`

// Main is the runner's command line; it returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	logCfg := logsapi.NewLoggingConfiguration()
	var showVersion bool
	global := pflag.NewFlagSet("runner", pflag.ContinueOnError)
	global.SetOutput(stderr)
	global.SetInterspersed(false)
	global.Usage = func() { fmt.Fprint(stderr, usage) }
	addGlobalFlags(global, logCfg, &showVersion)
	if err := global.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return ExitOK
		}
		fmt.Fprintf(stderr, "%v\n%s", err, usage)
		return ExitUsage
	}
	rest := global.Args()
	if showVersion && len(rest) == 0 {
		fmt.Fprintln(stdout, version())
		return ExitOK
	}
	if len(rest) == 0 {
		fmt.Fprint(stderr, usage)
		return ExitUsage
	}

	cmd, cmdArgs := rest[0], rest[1:]
	fs := pflag.NewFlagSet("runner "+cmd, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	addGlobalFlags(fs, logCfg, &showVersion)
	var opts Options
	switch cmd {
	case "run":
		AddRunFlags(fs, &opts)
	case "copy", "version":
	default:
		fmt.Fprintf(stderr, "unknown command %q\n%s", cmd, usage)
		return ExitUsage
	}
	if err := fs.Parse(cmdArgs); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return ExitOK
		}
		fmt.Fprintf(stderr, "runner %s: %v\n", cmd, err)
		return ExitUsage
	}
	// Main runs once per process; tests call it repeatedly with the same
	// logging configuration.
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
	if err := logsapi.ValidateAndApply(logCfg, nil); err != nil {
		fmt.Fprintf(stderr, "invalid logging flags: %v\n", err)
		return ExitUsage
	}
	defer klog.Flush()
	if showVersion {
		fmt.Fprintln(stdout, version())
		return ExitOK
	}

	switch cmd {
	case "version":
		if fs.NArg() > 0 {
			fmt.Fprintf(stderr, "version takes no arguments, got %q\n", fs.Args())
			return ExitUsage
		}
		fmt.Fprintln(stdout, version())
		return ExitOK
	case "copy":
		if fs.NArg() != 1 {
			fmt.Fprintf(stderr, "copy takes exactly one argument, the destination path\n")
			return ExitUsage
		}
		if err := CopySelf(fs.Arg(0)); err != nil {
			klog.ErrorS(err, "Copying the runner failed", "dest", fs.Arg(0))
			return ExitFailure
		}
		klog.InfoS("Runner copied", "dest", fs.Arg(0), "version", version())
		return ExitOK
	}

	if err := opts.Validate(fs.Args()); err != nil {
		fmt.Fprintf(stderr, "invalid run flags: %v\n", err)
		return ExitUsage
	}
	klog.InfoS("Runner starting", "version", version(), "op", opts.Op, "image", opts.Image)
	return Run(&opts, stopOnSignal())
}

func addGlobalFlags(fs *pflag.FlagSet, logCfg *logsapi.LoggingConfiguration, showVersion *bool) {
	logsapi.AddFlags(logCfg, fs)
	fs.BoolVar(showVersion, "version", false, "print the version and exit")
}

// stopOnSignal returns a channel closed on the first SIGTERM or SIGINT.
// Later signals are ignored: the runtime already has its stop request.
func stopOnSignal() <-chan struct{} {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	stop := make(chan struct{})
	go func() {
		sig := <-ch
		klog.InfoS("Signal received; stopping", "signal", sig.String())
		close(stop)
		for range ch {
		}
	}()
	return stop
}

// CopySelf copies the running binary to dest (mode 0755), through a
// temporary file in the same directory renamed into place.
func CopySelf(dest string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("locating the runner binary: %w", err)
	}
	src, err := os.Open(self)
	if err != nil {
		return fmt.Errorf("opening the runner binary %s: %w", self, err)
	}
	defer src.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dest), ".runner-*")
	if err != nil {
		return fmt.Errorf("creating a file next to %s: %w", dest, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, src); err != nil {
		tmp.Close()
		return fmt.Errorf("copying the runner binary to %s: %w", dest, err)
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return fmt.Errorf("making %s executable: %w", dest, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", dest, err)
	}
	if err := os.Rename(tmp.Name(), dest); err != nil {
		return fmt.Errorf("moving the runner binary to %s: %w", dest, err)
	}
	return nil
}
