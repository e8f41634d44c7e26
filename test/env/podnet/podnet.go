package podnet

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Range is the address range pod networks are carved from: 198.18.0.0/15,
// the block RFC 2544 sets aside for benchmarking, which no real network
// routes. Each network gets the /24 of its index.
var Range = net.IPNet{IP: net.IPv4(198, 18, 0, 0).To4(), Mask: net.CIDRMask(15, 32)}

// Networks is the number of /24 networks in Range.
const Networks = 512

// Host and pod addresses within a network's /24: .1 is the host's (on the
// bridge), .2 to .254 the pods'.
const (
	hostHost  = 1
	firstSlot = 2
	lastSlot  = 254
)

// Where a network's state lives on the machine. The lock files say which
// indexes are taken (a process holds the lock of its network while it runs;
// the kernel releases it when the process ends, however it ends); the named
// network namespaces are bind mounts in NetnsDir, where `ip netns` looks.
var (
	LockDir  = "/run/captf-env"
	NetnsDir = "/run/netns"
)

// Subnet returns the /24 of network index (0 to Networks-1).
func Subnet(index int) (*net.IPNet, error) {
	if index < 0 || index >= Networks {
		return nil, fmt.Errorf("podnet: network index %d out of 0..%d", index, Networks-1)
	}
	ip := make(net.IP, 4)
	copy(ip, Range.IP.To4())
	ip[2] += byte(index % 256)
	ip[3] = 0
	if index >= 256 {
		ip[1]++
	}
	return &net.IPNet{IP: ip, Mask: net.CIDRMask(24, 32)}, nil
}

// IndexOf returns the index of the network holding ip, and false when ip is
// outside Range.
func IndexOf(ip net.IP) (int, bool) {
	ip4 := ip.To4()
	if ip4 == nil || !Range.Contains(ip4) {
		return 0, false
	}
	return int(ip4[1]-Range.IP[1])*256 + int(ip4[2]), true
}

// address returns host number h of subnet s.
func address(s *net.IPNet, h int) net.IP {
	ip := make(net.IP, 4)
	copy(ip, s.IP.To4())
	ip[3] = byte(h)
	return ip
}

// prefix starts the name of every interface and network namespace of
// network index: the bridge is <prefix>br, a pod's host-side veth and its
// namespace are <prefix><slot> (at most 12 characters, within Linux's 15
// for interface names).
func prefix(index int) string { return "captf" + strconv.Itoa(index) + "-" }

// Prefix starts the name of every interface and network namespace of
// network index (captf<index>-).
func Prefix(index int) string { return prefix(index) }

// BridgeName is the name of network index's bridge.
func BridgeName(index int) string { return prefix(index) + "br" }

// PodName is the name of the host-side veth and of the network namespace of
// the pod in slot (its address's last number) of network index.
func PodName(index, slot int) string { return prefix(index) + strconv.Itoa(slot) }

// Network is one environment's pod network: a bridge holding the host's
// address (.1 of the network's /24) and, for each pod, a network namespace
// with lo and an eth0 whose peer is enslaved to the bridge. Pods reach the
// host's address and each other, nothing else: they get no default route,
// and the host does not forward.
type Network struct {
	Index  int
	Bridge string
	Subnet *net.IPNet
	// HostIP is the host's address on the bridge.
	HostIP net.IP

	lock *os.File // held by the process that created the network

	mu   sync.Mutex
	next int
	used map[int]bool
}

// Create claims the first free network index on this machine, removes
// whatever a process that held it before left behind (it ended without
// cleaning up: its lock is free again), and creates the bridge with the
// host's address. Close removes it all. Requires root.
func Create() (*Network, error) {
	if err := os.MkdirAll(LockDir, 0o755); err != nil {
		return nil, fmt.Errorf("podnet: %w", err)
	}
	taken, err := foreignSubnets()
	if err != nil {
		return nil, err
	}
	for i := range Networks {
		if taken[i] {
			continue
		}
		f, err := tryLock(i)
		if err != nil {
			return nil, err
		}
		if f == nil {
			continue
		}
		n, err := create(i)
		if err != nil {
			_ = sweep(i)
			_ = f.Close()
			return nil, err
		}
		n.lock = f
		_, _ = fmt.Fprintf(f, "%d\n", os.Getpid())
		return n, nil
	}
	return nil, fmt.Errorf("podnet: all %d networks of %s are taken", Networks, Range.String())
}

// tryLock takes the lock of network index; it returns nil when another
// process (or another Network of this one) holds it.
func tryLock(index int) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(LockDir, "podnet-"+strconv.Itoa(index)+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("podnet: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, fmt.Errorf("podnet: failed to lock network %d: %w", index, err)
	}
	return f, nil
}

// foreignSubnets returns the indexes whose /24 holds an address of an
// interface that is not one of ours: those are left alone.
func foreignSubnets() (map[int]bool, error) {
	addrs, err := addrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("podnet: failed to list addresses: %w", err)
	}
	links := map[int]string{}
	ls, err := linkList()
	if err != nil {
		return nil, fmt.Errorf("podnet: failed to list interfaces: %w", err)
	}
	for _, l := range ls {
		links[l.Attrs().Index] = l.Attrs().Name
	}
	taken := map[int]bool{}
	for _, a := range addrs {
		i, ok := IndexOf(a.IP)
		if ok && !strings.HasPrefix(links[a.LinkIndex], prefix(i)) {
			taken[i] = true
		}
	}
	return taken, nil
}

func create(i int) (*Network, error) {
	if err := sweep(i); err != nil {
		return nil, err
	}
	subnet, _ := Subnet(i)
	n := &Network{Index: i, Bridge: BridgeName(i), Subnet: subnet, HostIP: address(subnet, hostHost), next: firstSlot, used: map[int]bool{}}
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: n.Bridge}}
	if err := netlink.LinkAdd(br); err != nil {
		return nil, fmt.Errorf("podnet: failed to create bridge %s: %w", n.Bridge, err)
	}
	_ = netlink.LinkSetAlias(br, "captf-env pod network, pid "+strconv.Itoa(os.Getpid()))
	if err := netlink.AddrAdd(br, &netlink.Addr{IPNet: &net.IPNet{IP: n.HostIP, Mask: subnet.Mask}}); err != nil {
		return nil, fmt.Errorf("podnet: failed to address bridge %s: %w", n.Bridge, err)
	}
	if err := netlink.LinkSetUp(br); err != nil {
		return nil, fmt.Errorf("podnet: failed to bring bridge %s up: %w", n.Bridge, err)
	}
	return n, nil
}

// Attach returns the network whose bridge holds hostIP, created by another
// process (which keeps it and removes it): the process kubelet of a child
// process adds its pods to the network of the process that started the
// control plane.
func Attach(hostIP net.IP) (*Network, error) {
	i, ok := IndexOf(hostIP)
	if !ok {
		return nil, fmt.Errorf("podnet: %s is not in %s", hostIP, Range.String())
	}
	subnet, _ := Subnet(i)
	n := &Network{Index: i, Bridge: BridgeName(i), Subnet: subnet, HostIP: address(subnet, hostHost), next: firstSlot, used: map[int]bool{}}
	if !n.HostIP.Equal(hostIP) {
		return nil, fmt.Errorf("podnet: %s is not the host address of a network (%s is)", hostIP, n.HostIP)
	}
	br, err := netlink.LinkByName(n.Bridge)
	if err != nil {
		return nil, fmt.Errorf("podnet: no bridge %s for %s: %w", n.Bridge, hostIP, err)
	}
	addrs, err := addrList(br, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("podnet: failed to list addresses of %s: %w", n.Bridge, err)
	}
	for _, a := range addrs {
		if a.IP.Equal(hostIP) {
			return n, nil
		}
	}
	return nil, fmt.Errorf("podnet: bridge %s does not hold %s", n.Bridge, hostIP)
}

// Close removes every pod namespace and interface of the network and its
// bridge, and frees its index, when this process created it; on an attached
// network it does nothing (its pods are removed one by one).
func (n *Network) Close() error {
	if n.lock == nil {
		return nil
	}
	err := sweep(n.Index)
	// Closing the file releases the lock.
	_ = n.lock.Close()
	n.lock = nil
	return err
}

// sweep removes the network namespaces and interfaces of network index.
func sweep(index int) error {
	var errs []error
	p := prefix(index)
	entries, err := os.ReadDir(NetnsDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("podnet: %w", err))
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), p) {
			errs = append(errs, removeNetns(filepath.Join(NetnsDir, e.Name())))
		}
	}
	links, err := linkList()
	if err != nil {
		errs = append(errs, fmt.Errorf("podnet: failed to list interfaces: %w", err))
	}
	for _, l := range links {
		if strings.HasPrefix(l.Attrs().Name, p) {
			if err := netlink.LinkDel(l); err != nil && !isNotFound(err) {
				errs = append(errs, fmt.Errorf("podnet: failed to delete %s: %w", l.Attrs().Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

func isNotFound(err error) bool {
	var nf netlink.LinkNotFoundError
	return errors.As(err, &nf) || errors.Is(err, unix.ENODEV) || errors.Is(err, unix.ENOENT)
}

// removeNetns unmounts and removes a named network namespace; the
// namespace itself ends once no process is in it.
func removeNetns(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("podnet: failed to unmount %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("podnet: %w", err)
	}
	return nil
}

// Pod is the network of one pod.
type Pod struct {
	// Name is the network namespace's name (in NetnsDir) and the host-side
	// veth's.
	Name string
	// IP is the pod's address (its eth0's).
	IP   net.IP
	net  *Network
	slot int
}

// NetnsPath is the file naming the pod's network namespace (for setns).
func (p *Pod) NetnsPath() string { return filepath.Join(NetnsDir, p.Name) }

// AddPod gives a pod an address and a network namespace holding lo (up)
// and eth0 with that address, whose peer is on the bridge. Addresses are
// handed out in turn, so a freed one is not reused at once.
func (n *Network) AddPod() (*Pod, error) {
	slot, err := n.alloc()
	if err != nil {
		return nil, err
	}
	p := &Pod{Name: PodName(n.Index, slot), IP: address(n.Subnet, slot), net: n, slot: slot}
	if err := p.create(); err != nil {
		_ = p.Remove()
		return nil, err
	}
	return p, nil
}

func (n *Network) alloc() (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for range lastSlot - firstSlot + 1 {
		s := n.next
		n.next++
		if n.next > lastSlot {
			n.next = firstSlot
		}
		if !n.used[s] {
			n.used[s] = true
			return s, nil
		}
	}
	return 0, fmt.Errorf("podnet: all %d addresses of %s are in use", lastSlot-firstSlot+1, n.Subnet)
}

func (n *Network) free(slot int) {
	n.mu.Lock()
	delete(n.used, slot)
	n.mu.Unlock()
}

func (p *Pod) create() error {
	path := p.NetnsPath()
	if err := os.MkdirAll(NetnsDir, 0o755); err != nil {
		return fmt.Errorf("podnet: %w", err)
	}
	// Left by a process that ended before removing it.
	if err := removeNetns(path); err != nil {
		return err
	}
	if err := os.WriteFile(path, nil, 0o444); err != nil {
		return fmt.Errorf("podnet: %w", err)
	}
	mask := p.net.Subnet.Mask
	err := onThrowawayThread(func() error {
		host, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			return fmt.Errorf("podnet: %w", err)
		}
		defer host.Close()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("podnet: failed to create a network namespace: %w", err)
		}
		if err := unix.Mount("/proc/thread-self/ns/net", path, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("podnet: failed to name the network namespace %s: %w", p.Name, err)
		}
		// This thread is in the new namespace: the netlink sockets below
		// are opened there.
		lo, err := netlink.LinkByName("lo")
		if err == nil {
			err = netlink.LinkSetUp(lo)
		}
		if err != nil {
			return fmt.Errorf("podnet: failed to bring lo up in %s: %w", p.Name, err)
		}
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "eth0"}, PeerName: p.Name, PeerNamespace: netlink.NsFd(int(host.Fd()))}
		if err := netlink.LinkAdd(veth); err != nil {
			return fmt.Errorf("podnet: failed to create the veth pair of %s: %w", p.Name, err)
		}
		eth0, err := netlink.LinkByName("eth0")
		if err != nil {
			return fmt.Errorf("podnet: %w", err)
		}
		if err := netlink.AddrAdd(eth0, &netlink.Addr{IPNet: &net.IPNet{IP: p.IP, Mask: mask}}); err != nil {
			return fmt.Errorf("podnet: failed to address eth0 of %s: %w", p.Name, err)
		}
		if err := netlink.LinkSetUp(eth0); err != nil {
			return fmt.Errorf("podnet: failed to bring eth0 of %s up: %w", p.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	peer, err := netlink.LinkByName(p.Name)
	if err != nil {
		return fmt.Errorf("podnet: %w", err)
	}
	br, err := netlink.LinkByName(p.net.Bridge)
	if err != nil {
		return fmt.Errorf("podnet: %w", err)
	}
	if err := netlink.LinkSetMaster(peer, br); err != nil {
		return fmt.Errorf("podnet: failed to attach %s to %s: %w", p.Name, p.net.Bridge, err)
	}
	if err := netlink.LinkSetUp(peer); err != nil {
		return fmt.Errorf("podnet: failed to bring %s up: %w", p.Name, err)
	}
	return nil
}

// Remove deletes the pod's veth pair and network namespace and frees its
// address. It is safe to call twice.
func (p *Pod) Remove() error {
	var errs []error
	if l, err := netlink.LinkByName(p.Name); err == nil {
		if err := netlink.LinkDel(l); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("podnet: failed to delete %s: %w", p.Name, err))
		}
	} else if !isNotFound(err) {
		errs = append(errs, fmt.Errorf("podnet: %w", err))
	}
	errs = append(errs, removeNetns(p.NetnsPath()))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	p.net.free(p.slot)
	return nil
}

// onThrowawayThread runs fn on an OS thread of its own that ends with it,
// so that the namespaces fn enters never leak to other goroutines. The main
// thread, which the Go runtime never ends, is never used.
func onThrowawayThread(fn func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// Held by this goroutine, the main thread cannot be the one
			// the nested goroutine gets.
			err := onThrowawayThread(fn)
			runtime.UnlockOSThread()
			ch <- err
			return
		}
		// Never unlocked: the runtime ends the thread when the goroutine
		// returns.
		ch <- fn()
	}()
	return <-ch
}

// dumpRetries bounds the retries of a netlink dump that another process's
// changes interrupted (an environment creating or removing its network at
// the same time): the kernel then returns a partial list and netlink
// ErrDumpInterrupted, and the dump is simply asked again.
const dumpRetries = 20

func linkList() ([]netlink.Link, error) {
	for i := 0; ; i++ {
		ls, err := netlink.LinkList()
		if !errors.Is(err, netlink.ErrDumpInterrupted) || i == dumpRetries {
			return ls, err
		}
	}
}

func addrList(link netlink.Link, family int) ([]netlink.Addr, error) {
	for i := 0; ; i++ {
		as, err := netlink.AddrList(link, family)
		if !errors.Is(err, netlink.ErrDumpInterrupted) || i == dumpRetries {
			return as, err
		}
	}
}

// Leftovers lists the interfaces ("link <name>") and network namespaces
// ("netns <name>") named for network index: none once its Network is
// closed.
func Leftovers(index int) ([]string, error) {
	var out []string
	links, err := linkList()
	if err != nil {
		return nil, fmt.Errorf("podnet: failed to list interfaces: %w", err)
	}
	for _, l := range links {
		if strings.HasPrefix(l.Attrs().Name, Prefix(index)) {
			out = append(out, "link "+l.Attrs().Name)
		}
	}
	entries, _ := os.ReadDir(NetnsDir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), Prefix(index)) {
			out = append(out, "netns "+e.Name())
		}
	}
	return out, nil
}
