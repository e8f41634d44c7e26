// Command testrun runs the test binaries of a list of packages as `go test`
// does (each binary in its package's folder, several at once, one summary
// line per package, the output of a failing one in full), but builds them
// with `go test -c` into ${XDG_CACHE_HOME:-$HOME/.cache}/captf/testbin first.
// go test links every test binary again on every run; a binary built
// there is linked again only when something it is made of changed, so a
// second run of the same tree skips the links (about a fifth of `make
// test`'s CPU) and a run after a change relinks only the binaries the
// change reaches.
//
//	go run ./hack/testrun -p 3 -build '-race -trimpath' -timeout 45m ./test/e2e ./...
//
// Packages run in the order given (a package a pattern repeats keeps its
// first place), so the longest can be named first.
package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

func main() {
	p := flag.Int("p", 2, "test binaries run at once")
	build := flag.String("build", "", "go build flags of the test binaries (-race -trimpath ...)")
	timeout := flag.Duration("timeout", 10*time.Minute, "bound on each test binary (-test.timeout)")
	run := flag.String("run", "", "run only the tests matching this regular expression (-test.run)")
	verbose := flag.Bool("v", false, "print every test's output (-test.v)")
	flag.Parse()
	if err := testRun(*p, strings.Fields(*build), *timeout, *run, *verbose, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "testrun:", err)
		os.Exit(1)
	}
}

// pkg is one package of the list.
type pkg struct {
	ImportPath string
	Dir        string
	Tests      bool
	bin        string
}

func testRun(parallel int, buildFlags []string, timeout time.Duration, run string, verbose bool, patterns []string) error {
	if len(patterns) == 0 {
		patterns = []string{"."}
	}
	pkgs, err := list(patterns)
	if err != nil {
		return err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return err
	}
	key := sha256.Sum256([]byte(strings.Join(buildFlags, "\x00")))
	dir := filepath.Join(cache, "captf", "testbin", hex.EncodeToString(key[:6]))
	failed := buildAll(dir, buildFlags, pkgs)
	// Each binary is run from a hard link of its own, so another run that
	// builds into the cache meanwhile never changes what this one runs.
	runDir, err := os.MkdirTemp(filepath.Dir(dir), "run-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(runDir)
	for i, p := range pkgs {
		if p.bin == "" {
			continue
		}
		own := filepath.Join(runDir, fmt.Sprintf("%d-%s", i, filepath.Base(p.bin)))
		if err := os.Link(p.bin, own); err != nil {
			return err
		}
		p.bin = own
	}

	args := []string{"-test.paniconexit0", "-test.count=1", "-test.timeout=" + timeout.String()}
	if run != "" {
		args = append(args, "-test.run="+run)
	}
	if verbose {
		args = append(args, "-test.v=true")
	}
	var mu sync.Mutex
	work := make(chan *pkg)
	var wg sync.WaitGroup
	for range max(parallel, 1) {
		wg.Go(func() {
			for p := range work {
				out, ok := runOne(p, args, verbose)
				mu.Lock()
				os.Stdout.Write(out)
				if !ok {
					failed++
				}
				mu.Unlock()
			}
		})
	}
	for _, p := range pkgs {
		if p.bin != "" {
			work <- p
		}
	}
	close(work)
	wg.Wait()
	if failed > 0 {
		fmt.Println("FAIL")
		return fmt.Errorf("%d packages failed", failed)
	}
	return nil
}

// list returns the packages of patterns in their order, each once.
func list(patterns []string) ([]*pkg, error) {
	var pkgs []*pkg
	seen := map[string]bool{}
	for _, pattern := range patterns {
		cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{len .TestGoFiles}}{{len .XTestGoFiles}}", pattern)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("go list %s: %w", pattern, err)
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			f := strings.Split(sc.Text(), "\t")
			if len(f) != 3 || seen[f[0]] {
				continue
			}
			seen[f[0]] = true
			pkgs = append(pkgs, &pkg{ImportPath: f[0], Dir: f[1], Tests: f[2] != "00"})
		}
	}
	return pkgs, nil
}

// groups splits the packages with tests into groups whose binaries have
// distinct names (go test -c -o dir/ names each after its package's last
// element).
func groups(pkgs []*pkg) [][]*pkg {
	var gs [][]*pkg
	var names []map[string]bool
	for _, p := range pkgs {
		if !p.Tests {
			continue
		}
		name := path.Base(p.ImportPath)
		i := 0
		for ; i < len(gs) && names[i][name]; i++ {
		}
		if i == len(gs) {
			gs = append(gs, nil)
			names = append(names, map[string]bool{})
		}
		gs[i] = append(gs[i], p)
		names[i][name] = true
	}
	return gs
}

// buildAll builds every test binary, one go test -c per group; when a group
// fails to build, each of its packages is built alone so that the one that
// fails is reported and the others still run. It returns the number of
// packages that failed to build, and prints their errors.
func buildAll(dir string, buildFlags []string, pkgs []*pkg) int {
	failed := 0
	for i, g := range groups(pkgs) {
		out := filepath.Join(dir, fmt.Sprint(i))
		if err := os.MkdirAll(out, 0o755); err != nil {
			fmt.Printf("FAIL\t%s [setup failed]\n%v\n", g[0].ImportPath, err)
			return len(pkgs)
		}
		if goTestC(out+string(filepath.Separator), buildFlags, g) == nil {
			for _, p := range g {
				p.bin = filepath.Join(out, path.Base(p.ImportPath)+".test")
			}
			continue
		}
		for _, p := range g {
			bin := filepath.Join(out, path.Base(p.ImportPath)+".test")
			// A binary left from an earlier build must not stand in
			// for one that no longer builds.
			_ = os.Remove(bin)
			if err := goTestC(bin, buildFlags, []*pkg{p}); err != nil {
				fmt.Printf("%v\nFAIL\t%s [build failed]\n", err, p.ImportPath)
				failed++
				continue
			}
			p.bin = bin
		}
	}
	for _, p := range pkgs {
		if !p.Tests {
			fmt.Printf("?   \t%s\t[no test files]\n", p.ImportPath)
		}
	}
	return failed
}

func goTestC(out string, buildFlags []string, pkgs []*pkg) error {
	args := append([]string{"test", "-c", "-o", out}, buildFlags...)
	for _, p := range pkgs {
		args = append(args, p.ImportPath)
	}
	cmd := exec.Command("go", args...)
	b, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, b)
	}
	return nil
}

// cpuSeconds is the CPU time (user and system) a finished test binary and
// the processes it waited for used: what the package costs the machine,
// which its wall time on a loaded machine does not say.
func cpuSeconds(s *os.ProcessState) float64 {
	if s == nil {
		return 0
	}
	return (s.UserTime() + s.SystemTime()).Seconds()
}

// runOne runs a package's test binary in its folder and returns what go
// test would print for it, and whether it passed.
func runOne(p *pkg, args []string, verbose bool) ([]byte, bool) {
	start := time.Now()
	cmd := exec.Command(p.bin, args...)
	cmd.Dir = p.Dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	took := time.Since(start).Seconds()
	cpu := cpuSeconds(cmd.ProcessState)
	var exit *exec.ExitError
	switch {
	case err == nil && verbose:
		fmt.Fprintf(&out, "ok  \t%s\t%.3fs\tcpu %.0fs\n", p.ImportPath, took, cpu)
		return out.Bytes(), true
	case err == nil:
		return fmt.Appendf(nil, "ok  \t%s\t%.3fs\tcpu %.0fs\n", p.ImportPath, took, cpu), true
	case errors.As(err, &exit):
		fmt.Fprintf(&out, "FAIL\t%s\t%.3fs\n", p.ImportPath, took)
	default:
		fmt.Fprintf(&out, "%v\nFAIL\t%s\t%.3fs\n", err, p.ImportPath, took)
	}
	return out.Bytes(), false
}
