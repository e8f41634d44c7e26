package podnet

import (
	"net"
	"testing"
)

func TestSubnetsCoverTheRangeOnce(t *testing.T) {
	seen := map[string]bool{}
	for i := range Networks {
		s, err := Subnet(i)
		if err != nil {
			t.Fatal(err)
		}
		if ones, _ := s.Mask.Size(); ones != 24 {
			t.Fatalf("network %d: %s is not a /24", i, s)
		}
		if !Range.Contains(s.IP) || !Range.Contains(address(s, 254)) {
			t.Fatalf("network %d: %s is outside %s", i, s, Range.String())
		}
		if seen[s.String()] {
			t.Fatalf("network %d: %s handed out twice", i, s)
		}
		seen[s.String()] = true
		for _, h := range []int{hostHost, firstSlot, lastSlot} {
			if got, ok := IndexOf(address(s, h)); !ok || got != i {
				t.Fatalf("IndexOf(%s) = %d, %v; want %d", address(s, h), got, ok, i)
			}
		}
	}
	for _, tc := range []struct {
		i    int
		want string
	}{{0, "198.18.0.0/24"}, {1, "198.18.1.0/24"}, {255, "198.18.255.0/24"}, {256, "198.19.0.0/24"}, {511, "198.19.255.0/24"}} {
		if s, _ := Subnet(tc.i); s.String() != tc.want {
			t.Errorf("Subnet(%d) = %s, want %s", tc.i, s, tc.want)
		}
	}
	for _, bad := range []int{-1, Networks} {
		if _, err := Subnet(bad); err == nil {
			t.Errorf("Subnet(%d) did not fail", bad)
		}
	}
	for _, ip := range []string{"198.17.255.255", "198.20.0.0", "10.0.0.1", "127.0.0.1"} {
		if _, ok := IndexOf(net.ParseIP(ip)); ok {
			t.Errorf("IndexOf(%s) claims an address outside the range", ip)
		}
	}
}

func TestNamesFitInterfaceNames(t *testing.T) {
	for _, name := range []string{BridgeName(Networks - 1), PodName(Networks-1, lastSlot)} {
		if len(name) > 15 {
			t.Errorf("%q is longer than Linux's 15 characters for an interface", name)
		}
	}
	// The names of one network never start with the prefix of another:
	// sweeping network 1 must leave network 11 alone.
	if p := prefix(1); len(PodName(11, 2)) >= len(p) && PodName(11, 2)[:len(p)] == p {
		t.Errorf("%s starts with network 1's prefix %s", PodName(11, 2), p)
	}
}

func TestAddressesAreHandedOutInTurn(t *testing.T) {
	s, _ := Subnet(3)
	n := &Network{Index: 3, Subnet: s, next: firstSlot, used: map[int]bool{}}
	a, _ := n.alloc()
	b, _ := n.alloc()
	if a != firstSlot || b != firstSlot+1 {
		t.Fatalf("first slots %d, %d; want %d, %d", a, b, firstSlot, firstSlot+1)
	}
	n.free(a)
	c, _ := n.alloc()
	if c == a {
		t.Fatalf("freed slot %d reused at once", a)
	}
	for {
		if _, err := n.alloc(); err != nil {
			break
		}
	}
	if got := len(n.used); got != lastSlot-firstSlot+1 {
		t.Fatalf("%d slots in use when allocation failed, want all %d", got, lastSlot-firstSlot+1)
	}
	n.free(a)
	if got, err := n.alloc(); err != nil || got != a {
		t.Fatalf("after freeing %d in a full network, alloc = %d, %v", a, got, err)
	}
}
