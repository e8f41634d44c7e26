// Package podnet gives the local environment's pods addresses of their own:
// one network per environment, a Linux bridge holding the host's address,
// and per pod a network namespace with lo and a veth pair to the bridge.
//
// Networks are /24s of 198.18.0.0/15 (RFC 2544's benchmarking block, routed
// nowhere), one per index 0..511: network i holds 198.18.0.0 + i*256, the
// host is .1 on bridge captf<i>-br, pods are .2 to .254, each in network
// namespace captf<i>-<n> (a bind mount in /run/netns, so `ip netns` lists
// it) with its eth0 paired to host-side veth captf<i>-<n>. Pods get no
// default route: they reach the host's address (the API server, the
// kubelet's probes come from it) and each other, and nothing off the
// machine.
//
// Several environments run at once, in one process or several: Create
// claims the first index whose lock file (/run/captf-env/podnet-<i>.lock)
// no process holds, and holds it until Close. A process that ended without
// Close leaves its interfaces and namespaces, but the kernel frees its lock:
// the next Create of that index removes the leftovers first. Indexes whose
// /24 is used by an interface of someone else are skipped.
//
// Interfaces are managed over netlink (github.com/vishvananda/netlink), so
// no iproute2 is needed; namespaces are made with unshare(2) on a thread
// that ends afterwards. Requires root.
package podnet
