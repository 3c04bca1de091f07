package commitment

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// ConfigMapName is the ConfigMap, in the controller's namespace, that
// declares the commitments; ConfigMapKey is its data key.
const (
	ConfigMapName = "dovetail-commitments"
	ConfigMapKey  = "commitments.yaml"
)

// PriceFactor is the share of its on-demand price that covered capacity
// is priced at (the reserved-capacity factor, pkg/providers/aws).
const PriceFactor = 1e-4

// Savings Plan types.
const (
	TypeCompute     = "Compute"
	TypeEC2Instance = "EC2Instance"
)

const onDemand = "on-demand"

// Spec is the content of the ConfigMap's commitments.yaml.
type Spec struct {
	SavingsPlans      []SavingsPlan      `json:"savingsPlans,omitempty"`
	ReservedInstances []ReservedInstance `json:"reservedInstances,omitempty"`
}

// SavingsPlan is a dollar commitment per hour.
type SavingsPlan struct {
	Name string `json:"name"`
	// Type is Compute (any on-demand usage) or EC2Instance (one instance
	// family in one region).
	Type string `json:"type"`
	// HourlyCommitment is USD per hour, a decimal number or string ("20",
	// "20.50"); never negative.
	HourlyCommitment Amount `json:"hourlyCommitment"`
	// InstanceFamily and Region scope an EC2Instance plan (both required
	// there, not allowed on a Compute plan).
	InstanceFamily string `json:"instanceFamily,omitempty"`
	Region         string `json:"region,omitempty"`
}

// ReservedInstance is a count of instances of one type.
type ReservedInstance struct {
	Name         string `json:"name"`
	InstanceType string `json:"instanceType"`
	// Zone, when set, makes a zonal reservation: only instances in it are
	// covered.
	Zone  string `json:"zone,omitempty"`
	Count int    `json:"count"`
}

// Amount is a dollar amount as written: a number or a string.
type Amount string

// UnmarshalJSON takes a JSON number or string.
func (a *Amount) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*a = Amount(s)
		return nil
	}
	if string(b) == "null" {
		*a = ""
		return nil
	}
	*a = Amount(b)
	return nil
}

// Value parses the amount.
func (a Amount) Value() (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(string(a)), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("not a number")
	}
	return v, nil
}

// FromConfigMap reads the ConfigMap's data: its commitments.yaml, parsed
// and validated. The errors name every bad field (paths from data, e.g.
// data[commitments.yaml].savingsPlans[0].hourlyCommitment); with any,
// the Spec is empty: no commitment is applied.
func FromConfigMap(data map[string]string) (Spec, field.ErrorList) {
	root := field.NewPath("data").Key(ConfigMapKey)
	for k := range data {
		if k != ConfigMapKey {
			return Spec{}, field.ErrorList{field.NotSupported(field.NewPath("data").Key(k), k, []string{ConfigMapKey})}
		}
	}
	var s Spec
	if err := yaml.UnmarshalStrict([]byte(data[ConfigMapKey]), &s); err != nil {
		return Spec{}, field.ErrorList{field.Invalid(root, "", fmt.Sprintf("not commitments YAML: %v", err))}
	}
	if errs := s.Validate(root); len(errs) > 0 {
		return Spec{}, errs
	}
	return s, nil
}

// Validate checks names, types, amounts and counts; paths start at root
// (nil: the Spec itself).
func (s Spec) Validate(root *field.Path) field.ErrorList {
	child := func(name string) *field.Path {
		if root == nil {
			return field.NewPath(name)
		}
		return root.Child(name)
	}
	var errs field.ErrorList
	names := map[string]bool{}
	name := func(p *field.Path, n string) {
		switch {
		case n == "":
			errs = append(errs, field.Required(p, "names the commitment in plans and `cost`"))
		case names[n]:
			errs = append(errs, field.Duplicate(p, n))
		}
		names[n] = true
	}
	for i, sp := range s.SavingsPlans {
		p := child("savingsPlans").Index(i)
		name(p.Child("name"), sp.Name)
		if v, err := sp.HourlyCommitment.Value(); err != nil {
			errs = append(errs, field.Invalid(p.Child("hourlyCommitment"), string(sp.HourlyCommitment), "must be an amount of USD per hour, such as \"20\" or \"20.50\""))
		} else if v < 0 {
			errs = append(errs, field.Invalid(p.Child("hourlyCommitment"), string(sp.HourlyCommitment), "must not be negative"))
		}
		switch sp.Type {
		case TypeCompute:
			if sp.InstanceFamily != "" {
				errs = append(errs, field.Forbidden(p.Child("instanceFamily"), "a Compute plan covers every family"))
			}
			if sp.Region != "" {
				errs = append(errs, field.Forbidden(p.Child("region"), "a Compute plan covers every region"))
			}
		case TypeEC2Instance:
			if sp.InstanceFamily == "" || strings.Contains(sp.InstanceFamily, ".") {
				errs = append(errs, field.Invalid(p.Child("instanceFamily"), sp.InstanceFamily, "an EC2Instance plan needs an instance family, such as m5"))
			}
			if sp.Region == "" {
				errs = append(errs, field.Required(p.Child("region"), "an EC2Instance plan covers one region"))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("type"), sp.Type, []string{TypeCompute, TypeEC2Instance}))
		}
	}
	for i, ri := range s.ReservedInstances {
		p := child("reservedInstances").Index(i)
		name(p.Child("name"), ri.Name)
		if ri.InstanceType == "" {
			errs = append(errs, field.Required(p.Child("instanceType"), ""))
		}
		if ri.Count < 0 {
			errs = append(errs, field.Invalid(p.Child("count"), ri.Count, "must not be negative"))
		}
	}
	return errs
}

// Usage is one on-demand node (or NodeClaim) that may be covered.
type Usage struct {
	InstanceType, Zone, Region string
	// PricePerHour is its on-demand price.
	PricePerHour float64
}

// Coverage is what a commitment covers of one usage.
type Coverage struct {
	// Commitment names it ("" when nothing is covered).
	Commitment string
	// Covered is the $/h of the usage's price that is covered; Full when
	// it is all of it.
	Covered float64
	Full    bool
}

// Marginal is what the usage costs at the margin: the uncovered part,
// plus PriceFactor of the covered part.
func (c Coverage) Marginal(price float64) float64 {
	if c.Commitment == "" {
		return price
	}
	return math.Max(price-c.Covered, 0) + PriceFactor*c.Covered
}

// Ledger is what is left of the commitments. The zero value and nil
// cover nothing.
type Ledger struct {
	ri []riRoom
	sp []spRoom
}

type riRoom struct {
	ReservedInstance
	left int
}

type spRoom struct {
	SavingsPlan
	left float64
}

// NewLedger starts a ledger with the whole of s (which Validate passed;
// invalid entries are skipped).
func NewLedger(s Spec) *Ledger {
	l := &Ledger{}
	for _, ri := range s.ReservedInstances {
		if ri.Count > 0 && ri.InstanceType != "" {
			l.ri = append(l.ri, riRoom{ReservedInstance: ri, left: ri.Count})
		}
	}
	for _, typ := range []string{TypeEC2Instance, TypeCompute} {
		for _, sp := range s.SavingsPlans {
			if v, err := sp.HourlyCommitment.Value(); err == nil && v > 0 && sp.Type == typ {
				l.sp = append(l.sp, spRoom{SavingsPlan: sp, left: v})
			}
		}
	}
	if len(l.ri) == 0 && len(l.sp) == 0 {
		return nil
	}
	return l
}

// Empty reports whether the ledger covers nothing.
func (l *Ledger) Empty() bool {
	if l == nil {
		return true
	}
	for _, r := range l.ri {
		if r.left > 0 {
			return false
		}
	}
	for _, r := range l.sp {
		if r.left > 0 {
			return false
		}
	}
	return true
}

// Clone copies the ledger.
func (l *Ledger) Clone() *Ledger {
	if l == nil {
		return nil
	}
	return &Ledger{ri: slices.Clone(l.ri), sp: slices.Clone(l.sp)}
}

// Family is an instance type's family: its name before the dot.
func Family(instanceType string) string {
	f, _, _ := strings.Cut(instanceType, ".")
	return f
}

func (r *riRoom) matches(u Usage) bool {
	return r.InstanceType == u.InstanceType && (r.Zone == "" || r.Zone == u.Zone)
}

func (r *spRoom) matches(u Usage) bool {
	if r.Type == TypeCompute {
		return true
	}
	return r.InstanceFamily == Family(u.InstanceType) && (u.Region == "" || r.Region == u.Region)
}

// CanCover reports whether a whole usage would be covered now (by a
// Reserved Instance with room, or a Savings Plan with at least its price
// left), without taking anything.
func (l *Ledger) CanCover(u Usage) bool {
	if l == nil || !(u.PricePerHour >= 0) {
		return false
	}
	for i := range l.ri {
		if l.ri[i].left > 0 && l.ri[i].matches(u) {
			return true
		}
	}
	for i := range l.sp {
		if l.sp[i].left >= u.PricePerHour && l.sp[i].matches(u) {
			return true
		}
	}
	return false
}

// Covers reports whether the named commitment could ever cover the usage's
// type, zone and region (room or not): a covered claim keeps its options
// to those the same commitment covers.
func (l *Ledger) Covers(name string, u Usage) bool {
	if l == nil {
		return false
	}
	for i := range l.ri {
		if l.ri[i].Name == name {
			return l.ri[i].matches(u)
		}
	}
	for i := range l.sp {
		if l.sp[i].Name == name {
			return l.sp[i].matches(u)
		}
	}
	return false
}

// Take covers a new node whole, or nothing: the first Reserved Instance
// with room, else the first Savings Plan with its price left.
func (l *Ledger) Take(u Usage) Coverage {
	if l == nil || !(u.PricePerHour >= 0) {
		return Coverage{}
	}
	for i := range l.ri {
		if r := &l.ri[i]; r.left > 0 && r.matches(u) {
			r.left--
			return Coverage{Commitment: r.Name, Covered: u.PricePerHour, Full: true}
		}
	}
	for i := range l.sp {
		if r := &l.sp[i]; r.left >= u.PricePerHour && r.matches(u) {
			r.left -= u.PricePerHour
			return Coverage{Commitment: r.Name, Covered: u.PricePerHour, Full: true}
		}
	}
	return Coverage{}
}

// TakeExisting covers a running node: as Take, and otherwise the rest of
// the first matching Savings Plan that has any left covers part of it.
func (l *Ledger) TakeExisting(u Usage) Coverage {
	if c := l.Take(u); c.Commitment != "" || l == nil {
		return c
	}
	for i := range l.sp {
		if r := &l.sp[i]; r.left > 0 && r.matches(u) {
			c := Coverage{Commitment: r.Name, Covered: r.left}
			r.left = 0
			return c
		}
	}
	return Coverage{}
}

// Use is one named on-demand usage for Account.
type Use struct {
	Name string
	Usage
}

// Account consumes the ledger with the uses in name order (so every
// caller agrees on which node is covered) and returns each use's
// coverage by name. Uses of other capacity types must not be passed.
func Account(l *Ledger, uses []Use) map[string]Coverage {
	out := map[string]Coverage{}
	if l == nil {
		return out
	}
	slices.SortStableFunc(uses, func(a, b Use) int { return strings.Compare(a.Name, b.Name) })
	for _, u := range uses {
		if c := l.TakeExisting(u.Usage); c.Commitment != "" {
			out[u.Name] = c
		}
	}
	return out
}

// Left is what is left of each commitment: Reserved Instances as a count,
// Savings Plans in $/h; for reports.
func (l *Ledger) Left() map[string]float64 {
	out := map[string]float64{}
	if l == nil {
		return out
	}
	for _, r := range l.ri {
		out[r.Name] = float64(r.left)
	}
	for _, r := range l.sp {
		out[r.Name] = r.left
	}
	return out
}

// IsOnDemand reports whether a capacity type is the one commitments cover.
func IsOnDemand(ct string) bool { return ct == onDemand }
