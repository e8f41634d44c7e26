package terraformmachinetemplate

import (
	"fmt"
	"net/netip"
)

// specialRange is a block of addresses an inspection may not reach without
// --allow-private-registries, or one whose address embeds an IPv4 address
// that is what the packets reach in the end.
type specialRange struct {
	prefix netip.Prefix
	// name says what the block is, with the document that reserves it.
	name string
	// embedded, when set, returns the IPv4 address the block's address
	// stands for; the address is public when that one is. Without it, every
	// address of the block is refused.
	embedded func(netip.Addr) netip.Addr
}

// specialRanges are the blocks of the IANA IPv4 and IPv6 Special-Purpose
// Address Registries that are not globally reachable, the multicast
// blocks, the parts of the IPv6 space not allocated for global unicast,
// and the IPv6 blocks that carry an IPv4 address (mapped, NAT64, 6to4),
// checked through that address. The first block that holds an address
// decides, so a block comes before any wider block that holds it.
//
// A registry's name is resolved by the manager's resolver, and a NAT64
// gateway, a 6to4 relay or the kernel's mapped-address handling would turn
// such an IPv6 address into a connection to the IPv4 address it carries:
// checking only the IPv6 address would let 64:ff9b::a9fe:a9fe reach
// 169.254.169.254, the metadata service of most clouds.
var specialRanges = []specialRange{
	// IPv6 forms of an IPv4 address, checked through it.
	{netip.MustParsePrefix("::ffff:0:0/96"), "IPv4-mapped (RFC 4291)", lowV4},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64 well-known prefix (RFC 6052)", lowV4},
	{netip.MustParsePrefix("2002::/16"), "6to4 (RFC 3056)", sixToFourV4},

	// IPv4 Special-Purpose Address Registry, the blocks not globally
	// reachable (and those it marks N/A).
	{netip.MustParsePrefix("0.0.0.0/8"), "this network (RFC 791)", nil},
	{netip.MustParsePrefix("10.0.0.0/8"), "private use (RFC 1918)", nil},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space (RFC 6598), carrier-grade NAT and some clouds' metadata", nil},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback (RFC 1122)", nil},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (RFC 3927), cloud metadata", nil},
	{netip.MustParsePrefix("172.16.0.0/12"), "private use (RFC 1918)", nil},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments (RFC 6890)", nil},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation, TEST-NET-1 (RFC 5737)", nil},
	{netip.MustParsePrefix("192.88.99.0/24"), "6to4 relay anycast, deprecated (RFC 7526)", nil},
	{netip.MustParsePrefix("192.168.0.0/16"), "private use (RFC 1918)", nil},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking (RFC 2544)", nil},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation, TEST-NET-2 (RFC 5737)", nil},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation, TEST-NET-3 (RFC 5737)", nil},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast (RFC 5771)", nil},
	{netip.MustParsePrefix("255.255.255.255/32"), "limited broadcast (RFC 919)", nil},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (RFC 1112)", nil},

	// IPv6 Special-Purpose Address Registry, the blocks not globally
	// reachable (and those it marks N/A).
	{netip.MustParsePrefix("::/128"), "unspecified (RFC 4291)", nil},
	{netip.MustParsePrefix("::1/128"), "loopback (RFC 4291)", nil},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64 (RFC 8215)", nil},
	{netip.MustParsePrefix("100::/64"), "discard-only (RFC 6666)", nil},
	{netip.MustParsePrefix("100:0:0:1::/64"), "dummy IPv6 prefix (IANA special-purpose registry)", nil},
	{netip.MustParsePrefix("2001::/32"), "Teredo (RFC 4380)", nil},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation (RFC 3849)", nil},
	{netip.MustParsePrefix("2001::/23"), "IETF protocol assignments (RFC 2928)", nil},
	{netip.MustParsePrefix("3fff::/20"), "documentation (RFC 9637)", nil},
	{netip.MustParsePrefix("5f00::/16"), "segment routing SIDs (RFC 9602)", nil},
	{netip.MustParsePrefix("fc00::/7"), "unique local (RFC 4193)", nil},
	{netip.MustParsePrefix("fe80::/10"), "link-local (RFC 4291)", nil},
	{netip.MustParsePrefix("fec0::/10"), "site-local, deprecated (RFC 3879)", nil},
	{netip.MustParsePrefix("ff00::/8"), "multicast (RFC 4291)", nil},

	// What is left outside 2000::/3 is not allocated for global unicast
	// (RFC 4291 §2.4): the IPv4-compatible and IPv4-translated forms in
	// ::/8 among it.
	{netip.MustParsePrefix("::/3"), "not global unicast (RFC 4291)", nil},
	{netip.MustParsePrefix("4000::/2"), "not global unicast (RFC 4291)", nil},
	{netip.MustParsePrefix("8000::/1"), "not global unicast (RFC 4291)", nil},
}

// lowV4 is the IPv4 address in the last 32 bits.
func lowV4(a netip.Addr) netip.Addr {
	b := a.As16()
	return netip.AddrFrom4([4]byte(b[12:16]))
}

// sixToFourV4 is the IPv4 address of a 6to4 address, bits 16 to 47.
func sixToFourV4(a netip.Addr) netip.Addr {
	b := a.As16()
	return netip.AddrFrom4([4]byte(b[2:6]))
}

// nonPublic says why ip may not be reached without
// --allow-private-registries ("" when it may): the special-purpose block
// that holds it, or the one that holds the IPv4 address it carries.
func nonPublic(ip netip.Addr) string {
	// A zone (fe80::1%eth0) keeps an address out of every prefix; the
	// address without it is what is reached.
	ip = ip.WithZone("")
	if !ip.IsValid() {
		return "not an IP address"
	}
	for _, r := range specialRanges {
		if !r.prefix.Contains(ip) {
			continue
		}
		if r.embedded == nil {
			return fmt.Sprintf("in %s, %s", r.prefix, r.name)
		}
		v4 := r.embedded(ip)
		if why := nonPublic(v4); why != "" {
			return fmt.Sprintf("in %s, %s, for %s %s", r.prefix, r.name, v4, why)
		}
		return ""
	}
	return ""
}
