package instancetype

import (
	"fmt"
	"slices"
	"strings"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
)

// Narrowing is what a class's launch template asks of an instance type
// beyond architecture and zone: template fields EC2 accepts only on some
// types. List keeps only the types that satisfy it, so a launch never
// picks a type EC2 refuses for the template. The zero value narrows
// nothing.
type Narrowing struct {
	// Enclaves: enclaveOptions.enabled is true; only types with Nitro
	// Enclaves support (NitroEnclavesSupport "supported").
	Enclaves bool `json:",omitempty"`
	// Nitro: connectionTracking is set; connection-tracking timeouts are
	// taken only on the Nitro hypervisor.
	Nitro bool `json:",omitempty"`
	// Cards lists, by network card index (ascending), the interfaces
	// spec.networkInterfaces puts on each card; empty when the class lists
	// none or only the primary interface, which every type takes.
	Cards []CardNeed `json:",omitempty"`
	// EFAOnly counts the efa-only interfaces: the type must support EFA
	// with at least that many EFA interfaces.
	EFAOnly int `json:",omitempty"`
}

// CardNeed is what the class's interfaces ask of one network card.
type CardNeed struct {
	// Index of the card; the type must have it.
	Index int
	// Interfaces on the card, and the highest device index among them:
	// the card must take Interfaces interfaces and MaxDevice+1 devices.
	Interfaces, MaxDevice int
}

// NarrowingFor is the narrowing a class's spec asks for.
func NarrowingFor(spec *awsv1.EC2NodeClassSpec) Narrowing {
	var n Narrowing
	if o := spec.EnclaveOptions; o != nil && o.Enabled != nil && *o.Enabled {
		n.Enclaves = true
	}
	n.Nitro = spec.ConnectionTracking != nil
	primaryOnly := true
	for _, ni := range spec.NetworkInterfaces {
		if ni.NetworkCardIndex != 0 || ni.DeviceIndex != 0 || ni.InterfaceType != awsv1.InterfaceTypeInterface {
			primaryOnly = false
		}
	}
	if primaryOnly {
		return n
	}
	byCard := map[int]*CardNeed{}
	for _, ni := range spec.NetworkInterfaces {
		c := byCard[int(ni.NetworkCardIndex)]
		if c == nil {
			c = &CardNeed{Index: int(ni.NetworkCardIndex)}
			byCard[c.Index] = c
		}
		c.Interfaces++
		c.MaxDevice = max(c.MaxDevice, int(ni.DeviceIndex))
		if ni.InterfaceType == awsv1.InterfaceTypeEFAOnly {
			n.EFAOnly++
		}
	}
	for _, c := range byCard {
		n.Cards = append(n.Cards, *c)
	}
	slices.SortFunc(n.Cards, func(a, b CardNeed) int { return a.Index - b.Index })
	return n
}

// Refuses returns why a type cannot take the class's template, "" when it
// can.
func (n Narrowing) Refuses(t *catalog.Type) string {
	var why []string
	if n.Enclaves && !t.NitroEnclaves {
		why = append(why, "no Nitro Enclaves support (spec.enclaveOptions.enabled)")
	}
	if n.Nitro && t.Hypervisor != "nitro" {
		why = append(why, fmt.Sprintf("hypervisor %q is not nitro (spec.connectionTracking)", t.Hypervisor))
	}
	for _, c := range n.Cards {
		limit, ok := cardLimit(t, c.Index)
		switch {
		case !ok:
			why = append(why, fmt.Sprintf("no network card %d (spec.networkInterfaces)", c.Index))
		case c.Interfaces > limit || c.MaxDevice >= limit:
			why = append(why, fmt.Sprintf("network card %d takes %d interfaces, the class puts %d there up to device index %d (spec.networkInterfaces)",
				c.Index, limit, c.Interfaces, c.MaxDevice))
		}
	}
	if n.EFAOnly > 0 && (!t.EFA || t.EFAInterfaces < n.EFAOnly) {
		why = append(why, fmt.Sprintf("%d EFA interfaces (EFA supported: %t), the class lists %d efa-only (spec.networkInterfaces)",
			t.EFAInterfaces, t.EFA, n.EFAOnly))
	}
	return strings.Join(why, "; ")
}

// cardLimit is the interface limit of a type's network card idx, from the
// per-card list EC2 reports; without one, the default card's limit for
// card 0 (every type has one card).
func cardLimit(t *catalog.Type, idx int) (int, bool) {
	for _, c := range t.NetworkCardList {
		if c.Index == idx {
			return c.MaxENIs, true
		}
	}
	if len(t.NetworkCardList) == 0 && idx == 0 {
		return t.MaxENIs, true
	}
	return 0, false
}
