package podnet

import (
	"bufio"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("pod networks need root")
	}
}

// inNetns runs fn on a throwaway thread that has joined the network
// namespace at path.
func inNetns(path string, fn func() error) error {
	return onThrowawayThread(func() error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			return err
		}
		return fn()
	})
}

// listenIn opens a TCP listener on addr inside the network namespace at
// path; the socket stays in that namespace whichever thread accepts on it.
func listenIn(t *testing.T, path, addr string) net.Listener {
	t.Helper()
	var ln net.Listener
	err := inNetns(path, func() (err error) {
		ln, err = net.Listen("tcp", addr)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// dialFrom dials addr from inside the network namespace at path.
func dialFrom(path, addr string) (net.Conn, error) {
	var c net.Conn
	err := inNetns(path, func() (err error) {
		c, err = net.DialTimeout("tcp", addr, 2*time.Second)
		return err
	})
	return c, err
}

// echo answers each connection with its own line.
func echo(ln net.Listener, line string) {
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, line+"\n")
			_ = c.Close()
		}
	}()
}

func readLine(t *testing.T, c net.Conn) string {
	t.Helper()
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	s, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("read from %s: %v", c.RemoteAddr(), err)
	}
	return strings.TrimSpace(s)
}

// leftovers lists the interfaces and namespaces named for network index.
func leftovers(t *testing.T, index int) []string {
	t.Helper()
	out, err := Leftovers(index)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTwoNetworksWithPodsOnOnePort(t *testing.T) {
	needRoot(t)
	var nets [2]*Network
	var wg sync.WaitGroup
	var errs [2]error
	for i := range nets {
		wg.Go(func() { nets[i], errs[i] = Create() })
	}
	wg.Wait()
	for i, n := range nets {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		t.Cleanup(func() { _ = n.Close() })
	}
	if nets[0].Index == nets[1].Index {
		t.Fatalf("two networks got index %d", nets[0].Index)
	}
	a, b := nets[0], nets[1]

	// Two pods of one network listen on one port, each on its address.
	var pods []*Pod
	for range 2 {
		p, err := a.AddPod()
		if err != nil {
			t.Fatal(err)
		}
		pods = append(pods, p)
	}
	if pods[0].IP.Equal(pods[1].IP) || !a.Subnet.Contains(pods[0].IP) || !a.Subnet.Contains(pods[1].IP) {
		t.Fatalf("pod addresses %s, %s in %s", pods[0].IP, pods[1].IP, a.Subnet)
	}
	for _, p := range pods {
		echo(listenIn(t, p.NetnsPath(), ":9443"), p.Name)
	}
	for _, p := range pods {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(p.IP.String(), "9443"), 5*time.Second)
		if err != nil {
			t.Fatalf("host -> pod %s: %v", p.IP, err)
		}
		if got := readLine(t, c); got != p.Name {
			t.Fatalf("%s:9443 answered %q, want %q", p.IP, got, p.Name)
		}
	}

	// A pod reaches the host's address on the bridge, and the other pod.
	hostLn, err := net.Listen("tcp", net.JoinHostPort(a.HostIP.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer hostLn.Close()
	echo(hostLn, "host")
	c, err := dialFrom(pods[0].NetnsPath(), hostLn.Addr().String())
	if err != nil {
		t.Fatalf("pod -> host %s: %v", hostLn.Addr(), err)
	}
	if got := readLine(t, c); got != "host" {
		t.Fatalf("host answered %q", got)
	}
	c, err = dialFrom(pods[0].NetnsPath(), net.JoinHostPort(pods[1].IP.String(), "9443"))
	if err != nil {
		t.Fatalf("pod -> pod: %v", err)
	}
	if got := readLine(t, c); got != pods[1].Name {
		t.Fatalf("pod answered %q", got)
	}
	// Nothing outside its own /24: no route to the other network's host
	// address, nor anywhere else.
	for _, addr := range []string{net.JoinHostPort(b.HostIP.String(), "443"), "192.0.2.1:443"} {
		if c, err := dialFrom(pods[0].NetnsPath(), addr); err == nil {
			c.Close()
			t.Errorf("a pod reached %s outside its network", addr)
		}
	}

	// Removing a pod removes its namespace and veth; Close removes the rest.
	if err := pods[0].Remove(); err != nil {
		t.Fatal(err)
	}
	for _, l := range leftovers(t, a.Index) {
		if strings.HasSuffix(l, pods[0].Name) {
			t.Errorf("%s left after the pod's removal", l)
		}
	}
	if err := pods[0].Remove(); err != nil {
		t.Errorf("second Remove: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if l := leftovers(t, a.Index); len(l) > 0 {
		t.Errorf("left after Close: %v", l)
	}
}

func TestLeftoversOfAnEndedProcessAreRemoved(t *testing.T) {
	needRoot(t)
	n, err := Create()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.AddPod(); err != nil {
		_ = n.Close()
		t.Fatal(err)
	}
	// As if the process had ended: its lock is free, its interfaces and
	// namespace are still there.
	_ = n.lock.Close()
	n.lock = nil
	index := n.Index
	defer func() { _ = sweep(index) }()
	if len(leftovers(t, index)) != 3 {
		t.Fatalf("expected a bridge, a veth and a namespace, have %v", leftovers(t, index))
	}
	f, err := tryLock(index)
	if err != nil {
		t.Fatal(err)
	}
	if f == nil {
		t.Skipf("another process claimed network %d meanwhile", index)
	}
	defer f.Close()
	n2, err := create(index)
	if err != nil {
		t.Fatal(err)
	}
	if got := leftovers(t, index); len(got) != 1 || got[0] != "link "+n2.Bridge {
		t.Fatalf("after claiming network %d again: %v, want its new bridge alone", index, got)
	}
	// The new network's first pod gets the first address again.
	p, err := n2.AddPod()
	if err != nil {
		t.Fatal(err)
	}
	if !p.IP.Equal(address(n2.Subnet, firstSlot)) {
		t.Errorf("first pod address %s", p.IP)
	}
}
