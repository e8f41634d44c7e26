// Command podprog is the program the local environment's tests run inside
// pods: each flag is one check or action, done in order of the flags below.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	var expectEnv, expectFile, write, apiGet, stat multi
	exit := flag.Int("exit", 0, "exit code")
	message := flag.String("message", "", "termination message")
	messagePath := flag.String("message-path", "/dev/termination-log", "termination message file")
	waitSigterm := flag.Bool("wait-sigterm", false, "block until SIGTERM")
	sleep := flag.Duration("sleep", 0, "sleep before exiting")
	identity := flag.Bool("identity", false, "print uid, gid, groups, working folder and hostname")
	ignoreSigterm := flag.Bool("ignore-sigterm", false, "with -wait-sigterm: keep running after SIGTERM")
	flag.Var(&stat, "stat", "PATH whose mode and owner to print")
	flag.Var(&expectEnv, "expect-env", "NAME=VALUE that must be set")
	flag.Var(&expectFile, "expect-file", "PATH=CONTENT that must match")
	flag.Var(&write, "write", "PATH=CONTENT to write")
	flag.Var(&apiGet, "api-get", "CODE=PATH: GET PATH with the pod's token, expect CODE")
	flag.Parse()

	// Registered first so a SIGTERM sent while checks run is not lost.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)

	if *identity {
		groups, _ := os.Getgroups()
		wd, _ := os.Getwd()
		host, _ := os.Hostname()
		fmt.Printf("uid=%d gid=%d groups=%v wd=%s hostname=%s\n", os.Getuid(), os.Getgid(), groups, wd, host)
	}
	for _, p := range stat {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			fail("stat %s: %v", p, err)
		}
		fmt.Printf("stat %s mode=%04o uid=%d gid=%d\n", p, st.Mode&0o7777, st.Uid, st.Gid)
	}
	for _, e := range expectEnv {
		k, v, _ := strings.Cut(e, "=")
		if got, ok := os.LookupEnv(k); !ok || got != v {
			fail("env %s: got %q (set: %v), want %q", k, got, ok, v)
		}
		fmt.Printf("env %s ok\n", k)
	}
	for _, e := range expectFile {
		p, want, _ := strings.Cut(e, "=")
		got, err := os.ReadFile(p)
		if err != nil {
			fail("file %s: %v", p, err)
		}
		if string(got) != want {
			fail("file %s: got %q, want %q", p, got, want)
		}
		fmt.Printf("file %s ok\n", p)
	}
	for _, e := range write {
		p, content, _ := strings.Cut(e, "=")
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			fail("write %s: %v", p, err)
		}
		fmt.Printf("wrote %s\n", p)
	}
	for _, e := range apiGet {
		code, path, _ := strings.Cut(e, "=")
		got, err := get(path)
		if err != nil {
			fail("GET %s: %v", path, err)
		}
		if strconv.Itoa(got) != code {
			fail("GET %s: status %d, want %s", path, got, code)
		}
		fmt.Printf("GET %s -> %d ok\n", path, got)
	}
	if *message != "" {
		if err := os.WriteFile(*messagePath, []byte(*message), 0o644); err != nil {
			fail("termination message: %v", err)
		}
	}
	if *waitSigterm {
		fmt.Println("waiting for SIGTERM")
		<-sigs
		fmt.Println("received SIGTERM")
		if *ignoreSigterm {
			fmt.Println("ignoring SIGTERM")
			select {}
		}
		os.Exit(0)
	}
	time.Sleep(*sleep)
	os.Exit(*exit)
}

// get calls the API server as in-cluster clients do: the service variables,
// the projected token and CA.
func get(path string) (int, error) {
	const dir = "/var/run/secrets/kubernetes.io/serviceaccount/"
	token, err := os.ReadFile(dir + "token")
	if err != nil {
		return 0, err
	}
	ca, err := os.ReadFile(dir + "ca.crt")
	if err != nil {
		return 0, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return 0, fmt.Errorf("no certificate in ca.crt")
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	url := "https://" + os.Getenv("KUBERNETES_SERVICE_HOST") + ":" + os.Getenv("KUBERNETES_SERVICE_PORT") + path
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	res, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	res.Body.Close()
	return res.StatusCode, nil
}

func fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	fmt.Println("FAIL:", msg)
	_ = os.WriteFile("/dev/termination-log", []byte(msg), 0o644)
	os.Exit(3)
}
