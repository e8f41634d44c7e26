package terraformmachinetemplate

import (
	"net/netip"
	"strings"
	"testing"
)

// TestSpecialPurposeRanges: every block of the IANA IPv4 and IPv6
// Special-Purpose Address Registries that is not globally reachable is
// refused without --allow-private-registries, and so is an IPv6 address
// that carries such an IPv4 address (mapped, NAT64, 6to4); the refusal
// names the block. Each case names the range it checks, and every entry
// of specialRanges is checked by a case.
func TestSpecialPurposeRanges(t *testing.T) {
	cases := []struct {
		rng  string // the specialRanges prefix the address falls in
		addr string
		// via is the block of the embedded IPv4 address, for the forms
		// that carry one.
		via string
	}{
		{"0.0.0.0/8", "0.1.2.3", ""},
		{"10.0.0.0/8", "10.20.30.40", ""},
		{"100.64.0.0/10", "100.64.0.1", ""},
		{"100.64.0.0/10", "100.127.255.254", ""},
		{"127.0.0.0/8", "127.0.0.53", ""},
		{"169.254.0.0/16", "169.254.169.254", ""},
		{"172.16.0.0/12", "172.31.0.1", ""},
		{"192.0.0.0/24", "192.0.0.170", ""},
		{"192.0.2.0/24", "192.0.2.10", ""},
		{"192.88.99.0/24", "192.88.99.1", ""},
		{"192.168.0.0/16", "192.168.150.10", ""},
		{"198.18.0.0/15", "198.19.1.1", ""},
		{"198.51.100.0/24", "198.51.100.7", ""},
		{"203.0.113.0/24", "203.0.113.9", ""},
		{"224.0.0.0/4", "239.255.255.250", ""},
		{"240.0.0.0/4", "240.0.0.1", ""},
		{"255.255.255.255/32", "255.255.255.255", ""},

		{"::/128", "::", ""},
		{"::1/128", "::1", ""},
		{"::ffff:0.0.0.0/96", "::ffff:127.0.0.1", "127.0.0.0/8"},
		{"::ffff:0.0.0.0/96", "::ffff:100.64.1.2", "100.64.0.0/10"},
		{"64:ff9b::/96", "64:ff9b::a9fe:a9fe", "169.254.0.0/16"},
		{"64:ff9b::/96", "64:ff9b::6440:1", "100.64.0.0/10"},
		{"64:ff9b::/96", "64:ff9b::a00:1", "10.0.0.0/8"},
		{"64:ff9b:1::/48", "64:ff9b:1::808:808", ""},
		{"100::/64", "100::1", ""},
		{"100:0:0:1::/64", "100:0:0:1::1", ""},
		{"2001::/32", "2001:0:4136:e378:8000:63bf:3fff:fdd2", ""},
		{"2001::/23", "2001:2::1", ""},
		{"2001::/23", "2001:1ff::1", ""},
		{"2001:db8::/32", "2001:db8::1", ""},
		{"2002::/16", "2002:c0a8:101::1", "192.168.0.0/16"},
		{"2002::/16", "2002:a9fe:a9fe::1", "169.254.0.0/16"},
		{"3fff::/20", "3fff:fff::1", ""},
		{"5f00::/16", "5f00::1", ""},
		{"fc00::/7", "fd00::1", ""},
		{"fe80::/10", "fe80::1", ""},
		{"fe80::/10", "fe80::1%eth0", ""},
		{"fec0::/10", "fec0::1", ""},
		{"ff00::/8", "ff02::1", ""},
		{"::/3", "::7f00:1", ""},       // IPv4-compatible ::127.0.0.1
		{"::/3", "::ffff:0:a00:1", ""}, // IPv4-translated ::ffff:0:10.0.0.1
		{"4000::/2", "4000::1", ""},
		{"8000::/1", "c000::1", ""},
	}
	// No block is hidden behind a wider one listed before it.
	for i, wide := range specialRanges {
		for _, narrow := range specialRanges[i+1:] {
			if wide.prefix.Bits() <= narrow.prefix.Bits() && wide.prefix.Overlaps(narrow.prefix) {
				t.Errorf("%s comes after %s, which holds it: it never decides", narrow.prefix, wide.prefix)
			}
		}
	}
	checked := map[string]bool{}
	for _, c := range cases {
		t.Run(c.rng+" "+c.addr, func(t *testing.T) {
			why := nonPublic(netip.MustParseAddr(c.addr))
			if why == "" {
				t.Fatalf("%s is taken for a public address", c.addr)
			}
			if !strings.Contains(why, "in "+c.rng+",") {
				t.Errorf("%s: %q does not name %s", c.addr, why, c.rng)
			}
			if c.via != "" && !strings.Contains(why, "in "+c.via+",") {
				t.Errorf("%s: %q does not name the embedded address's %s", c.addr, why, c.via)
			}
		})
		checked[c.rng] = true
	}
	for _, r := range specialRanges {
		if !checked[r.prefix.String()] {
			t.Errorf("no case checks %s (%s)", r.prefix, r.name)
		}
		// The first and last address of each block are refused too.
		for _, a := range []netip.Addr{r.prefix.Addr(), lastAddr(r.prefix)} {
			if nonPublic(a) == "" {
				t.Errorf("%s, an address of %s, is taken for a public address", a, r.prefix)
			}
		}
	}

	// Public addresses, including those at the edges of the blocks and
	// the IPv6 forms of a public IPv4 address, are reached.
	for _, a := range []string{
		"8.8.8.8", "1.1.1.1", "100.63.255.255", "100.128.0.0", "172.15.255.255", "172.32.0.0",
		"192.0.1.255", "192.169.0.0", "198.17.255.255", "198.20.0.0", "223.255.255.255",
		"2606:4700:4700::1111", "2a00:1450:4001::1", "2001:200::1", "2001:db9::1", "2003::1",
		"::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1",
	} {
		if why := nonPublic(netip.MustParseAddr(a)); why != "" {
			t.Errorf("public %s refused: %s", a, why)
		}
	}
}

// lastAddr is the last address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
