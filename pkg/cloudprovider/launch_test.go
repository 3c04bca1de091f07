package cloudprovider_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

const familyKey = "karpenter.k8s.aws/instance-family"

// familyTypes builds n types; type i is in family fam(i).
func familyTypes(n int, fam func(i int) string) []*cloudprovider.InstanceType {
	var out []*cloudprovider.InstanceType
	for i := range n {
		name := fmt.Sprintf("t%03d", i)
		out = append(out, &cloudprovider.InstanceType{Name: name, Labels: map[string]string{familyKey: fam(i)}})
	}
	return out
}

func names(ts []*cloudprovider.InstanceType) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

func minFamilies(n int) requirements.Requirements {
	return requirements.NewRequirements(requirements.MustNew(familyKey, requirements.Exists, nil, &n))
}

func TestTruncateLaunchTypesKeepsMinValues(t *testing.T) {
	// 100 types: the first 90 in family a, then one each of b..k.
	types := familyTypes(100, func(i int) string {
		if i < 90 {
			return "a"
		}
		return string(rune('b' + i - 90))
	})
	got, err := cloudprovider.TruncateLaunchTypes(types, minFamilies(5), 60)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 60 {
		t.Fatalf("kept %d types, want 60", len(got))
	}
	fams := map[string]bool{}
	for _, it := range got {
		fams[it.Labels[familyKey]] = true
	}
	if len(fams) < 5 {
		t.Errorf("kept %d families, want at least 5", len(fams))
	}
	// Order is preserved and the extra families are the earliest ones.
	if !slices.IsSortedFunc(got, func(a, b *cloudprovider.InstanceType) int { return compare(a.Name, b.Name) }) {
		t.Errorf("order not preserved: %v", names(got))
	}
	want := []string{"t090", "t091", "t092", "t093"}
	if !slices.Equal(names(got[56:]), want) {
		t.Errorf("the tail is %v, want %v", names(got[56:]), want)
	}
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestTruncateLaunchTypesShortIsMinValuesError(t *testing.T) {
	types := familyTypes(10, func(i int) string { return fmt.Sprint(i % 3) })
	_, err := cloudprovider.TruncateLaunchTypes(types, minFamilies(4), 60)
	var mv *requirements.MinValuesError
	if !errors.As(err, &mv) || mv.Key != familyKey || mv.Available != 3 {
		t.Fatalf("err = %v, want a MinValuesError on %s with 3 available", err, familyKey)
	}
	// More types needed than the cap allows.
	types = familyTypes(10, func(i int) string { return fmt.Sprint(i) })
	_, err = cloudprovider.TruncateLaunchTypes(types, minFamilies(8), 5)
	if !errors.Is(err, requirements.ErrMinValuesNotMet) {
		t.Fatalf("err = %v, want ErrMinValuesNotMet", err)
	}
}

func TestTruncateLaunchTypesShortListUntouched(t *testing.T) {
	types := familyTypes(7, func(i int) string { return "a" })
	got, err := cloudprovider.TruncateLaunchTypes(types, requirements.Requirements{}, 60)
	if err != nil || !slices.Equal(names(got), names(types)) {
		t.Fatalf("got %v, %v", names(got), err)
	}
}
