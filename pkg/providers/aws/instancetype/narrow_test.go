package instancetype_test

import (
	"context"
	"testing"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
)

// TestNarrowing: a class whose launch template carries a field EC2 takes
// only on some types lists exactly the types the built-in catalog (which
// the emulator serves) says take it, out of those the class lists without
// the field. Each case must remove some types and keep some, and the same
// provider answers the plain class and the narrowed one differently (the
// list cache keys on the narrowing).
func TestNarrowing(t *testing.T) {
	cat := catalog.Builtin()
	cardMax := func(ct *catalog.Type, idx int) int {
		for _, c := range ct.NetworkCardList {
			if c.Index == idx {
				return c.MaxENIs
			}
		}
		return -1
	}
	for _, tc := range []struct {
		name  string
		set   func(*awsv1.EC2NodeClassSpec)
		takes func(*catalog.Type) bool
	}{
		{"enclaveOptions.enabled", func(s *awsv1.EC2NodeClassSpec) {
			s.EnclaveOptions = &awsv1.EnclaveOptions{Enabled: ptr(true)}
		}, func(ct *catalog.Type) bool { return ct.NitroEnclaves }},
		{"connectionTracking", func(s *awsv1.EC2NodeClassSpec) {
			s.ConnectionTracking = &awsv1.ConnectionTracking{UDPTimeout: ptr(int32(30))}
		}, func(ct *catalog.Type) bool { return ct.Hypervisor == "nitro" }},
		{"networkInterfaces, two cards with EFA", func(s *awsv1.EC2NodeClassSpec) {
			s.NetworkInterfaces = []awsv1.NetworkInterface{
				{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeInterface},
				{NetworkCardIndex: 0, DeviceIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly},
				{NetworkCardIndex: 1, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeEFAOnly},
			}
		}, func(ct *catalog.Type) bool {
			return ct.EFA && ct.EFAInterfaces >= 2 && cardMax(ct, 0) >= 2 && cardMax(ct, 1) >= 1
		}},
		{"networkInterfaces, four on the primary card", func(s *awsv1.EC2NodeClassSpec) {
			for d := range int32(4) {
				s.NetworkInterfaces = append(s.NetworkInterfaces, awsv1.NetworkInterface{DeviceIndex: d, InterfaceType: awsv1.InterfaceTypeInterface})
			}
		}, func(ct *catalog.Type) bool { return cardMax(ct, 0) >= 4 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, p, _ := newProvider(t, false)
			nc := resolvedClass(cat.DefaultZones(e.Options().Region))
			ctx := context.Background()
			plain, err := p.List(ctx, nc)
			if err != nil {
				t.Fatal(err)
			}
			narrowed := nc.DeepCopy()
			tc.set(&narrowed.Spec)
			got, err := p.List(ctx, narrowed)
			if err != nil {
				t.Fatal(err)
			}
			listed := map[string]bool{}
			for _, it := range got {
				listed[it.Name] = true
			}
			kept, dropped := 0, 0
			for _, it := range plain {
				ct, ok := cat.Type(it.Name)
				if !ok {
					t.Fatalf("%s is not in the built-in catalog", it.Name)
				}
				want := tc.takes(ct)
				if listed[it.Name] != want {
					t.Errorf("%s listed = %t, the catalog says it takes the field: %t", it.Name, listed[it.Name], want)
				}
				if want {
					kept++
				} else {
					dropped++
				}
			}
			if len(got) != kept {
				t.Errorf("narrowed list has %d types, %d of the plain list qualify", len(got), kept)
			}
			if kept == 0 || dropped == 0 {
				t.Errorf("kept %d, dropped %d of %d: the case does not narrow", kept, dropped, len(plain))
			}
			again, err := p.List(ctx, nc)
			if err != nil {
				t.Fatal(err)
			}
			if len(again) != len(plain) {
				t.Errorf("the plain class lists %d types after the narrowed one, %d before", len(again), len(plain))
			}
		})
	}
}

// TestNarrowingPrimaryOnly: a class that lists only the primary interface
// narrows nothing; every type takes it.
func TestNarrowingPrimaryOnly(t *testing.T) {
	e, p, _ := newProvider(t, false)
	nc := resolvedClass(catalog.Builtin().DefaultZones(e.Options().Region))
	ctx := context.Background()
	plain, err := p.List(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	nc.Spec.NetworkInterfaces = []awsv1.NetworkInterface{{InterfaceType: awsv1.InterfaceTypeInterface}}
	got, err := p.List(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(plain) {
		t.Errorf("primary interface only: %d types, %d without", len(got), len(plain))
	}
}
