// Command podprog is the program the local environment's tests run inside
// pods: each flag is one check or action, done in order of the flags below.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
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
	serveAddr := flag.String("serve", "", "after the checks, serve HTTPS (with -tls-dir) or HTTP on this address until SIGTERM (see serve)")
	tlsDir := flag.String("tls-dir", "", "folder holding tls.crt and tls.key for -serve")
	readyAfter := flag.Duration("ready-after", 0, "with -serve: /readyz fails until this long after the start")
	unhealthyAfter := flag.Duration("unhealthy-after", 0, "with -serve: /healthz fails from this long after the start (0: never)")
	flag.Parse()
	start := time.Now()

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
	if *serveAddr != "" {
		serve(*serveAddr, *tlsDir, start, *readyAfter, *unhealthyAfter, sigs)
		return
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

// serve answers until SIGTERM:
//
//	/readyz   200 from readyAfter after the start, 503 before
//	/healthz  200, or 500 from unhealthyAfter after the start
//	/validate a ValidatingWebhook: denies objects named deny-*, with a
//	          message naming this pod, and allows the others
//	/         "<POD_NAME> <POD_IP>" (variables set from the downward API)
func serve(addr, tlsDir string, start time.Time, readyAfter, unhealthyAfter time.Duration, sigs <-chan os.Signal) {
	me := os.Getenv("POD_NAME") + " " + os.Getenv("POD_IP")
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if time.Since(start) < readyAfter {
			http.Error(w, "not ready yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if unhealthyAfter > 0 && time.Since(start) >= unhealthyAfter {
			http.Error(w, "unhealthy", http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/validate", func(w http.ResponseWriter, r *http.Request) {
		var review struct {
			Request struct {
				UID    string `json:"uid"`
				Name   string `json:"name"`
				Object struct {
					Metadata struct {
						Name string `json:"name"`
					} `json:"metadata"`
				} `json:"object"`
			} `json:"request"`
		}
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		name := review.Request.Object.Metadata.Name
		if name == "" {
			name = review.Request.Name
		}
		response := map[string]any{"uid": review.Request.UID, "allowed": true}
		if strings.HasPrefix(name, "deny-") {
			response["allowed"] = false
			response["status"] = map[string]any{"code": 403, "message": "denied by " + me}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response,
		})
		fmt.Printf("webhook: %s %s\n", name, map[bool]string{true: "allowed", false: "denied"}[response["allowed"] == true])
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, me) })
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errs := make(chan error, 1)
	go func() {
		if tlsDir != "" {
			errs <- srv.ListenAndServeTLS(tlsDir+"/tls.crt", tlsDir+"/tls.key")
		} else {
			errs <- srv.ListenAndServe()
		}
	}()
	fmt.Printf("serving on %s as %s\n", addr, me)
	select {
	case err := <-errs:
		fail("serve: %v", err)
	case <-sigs:
		fmt.Println("received SIGTERM")
		_ = srv.Close()
	}
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
