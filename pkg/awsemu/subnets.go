package awsemu

import (
	"fmt"
	"maps"
	"net/netip"
)

// AddSubnet adds a subnet of the seeded VPC in zone (a zone name of the
// region) with the IPv4 CIDR cidr (inside 10.0.0.0/16, /16 to /28, not
// overlapping another subnet) and the given tags, as the account's owner
// would with CreateSubnet. It returns the subnet's id. Tests use it to give
// a zone several subnets.
func (e *Emulator) AddSubnet(zone, cidr string, tags map[string]string) (string, error) {
	pfx, err := netip.ParsePrefix(cidr)
	if err != nil || !pfx.Addr().Is4() || pfx.Masked() != pfx {
		return "", fmt.Errorf("awsemu: AddSubnet: cidr %q is not an IPv4 network address with a prefix length", cidr)
	}
	if pfx.Bits() < 16 || pfx.Bits() > 28 {
		return "", fmt.Errorf("awsemu: AddSubnet: cidr %q: the prefix length must be between /16 and /28", cidr)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	vpc := netip.MustParsePrefix(e.acct.vpc.CIDR)
	if !vpc.Contains(pfx.Addr()) || pfx.Bits() < vpc.Bits() {
		return "", fmt.Errorf("awsemu: AddSubnet: cidr %q is not inside the VPC's %s", cidr, e.acct.vpc.CIDR)
	}
	for _, s := range e.acct.subnets {
		if o := netip.MustParsePrefix(s.CIDR); o.Overlaps(pfx) {
			return "", fmt.Errorf("awsemu: AddSubnet: cidr %q overlaps subnet %s (%s)", cidr, s.ID, s.CIDR)
		}
	}
	var z *Zone
	for _, c := range e.catalog.Zones(e.opts.Region) {
		if c.Name == zone {
			c := c
			z = &c
		}
	}
	if z == nil {
		return "", fmt.Errorf("awsemu: AddSubnet: %q is not a zone of %s", zone, e.opts.Region)
	}
	a4 := pfx.Addr().As4()
	s := &subnetRec{
		ID: e.newID("subnet"), Zone: *z, CIDR: cidr,
		base:  uint32(a4[0])<<24 | uint32(a4[1])<<16 | uint32(a4[2])<<8 | uint32(a4[3]),
		size:  1 << (32 - pfx.Bits()),
		Tags:  maps.Clone(tags),
		VPCID: e.acct.vpc.ID,
	}
	if s.Tags == nil {
		s.Tags = map[string]string{}
	}
	e.acct.subnets = append(e.acct.subnets, s)
	return s.ID, nil
}

// ReserveAddresses takes n free addresses of a subnet, as network
// interfaces the emulator does not model (pods' secondary addresses, load
// balancers) do; AvailableIpAddressCount drops by n. It fails when the
// subnet does not exist or has fewer than n free addresses.
func (e *Emulator) ReserveAddresses(subnetID string, n int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.acct.subnet(subnetID)
	if s == nil {
		return fmt.Errorf("awsemu: ReserveAddresses: no subnet %s", subnetID)
	}
	if free := s.freeAddresses(); int64(n) > free {
		return fmt.Errorf("awsemu: ReserveAddresses: subnet %s has %d free addresses, not %d", subnetID, free, n)
	}
	for range n {
		if _, ok := s.allocateIP(); !ok {
			return fmt.Errorf("awsemu: ReserveAddresses: subnet %s is full", subnetID)
		}
	}
	return nil
}
