package clusterdump

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail-sh/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

// DefaultPageSize is the list limit of one request.
const DefaultPageSize = 500

// Options configure Read.
type Options struct {
	// PageSize is the limit of each list request (DefaultPageSize when 0).
	PageSize int64
	// Progress receives one line per page and per kind; nil discards.
	Progress io.Writer
}

// Dump is a sanitized cluster, ready to be written as simulate input.
type Dump struct {
	NodePools              []*karpv1.NodePool
	NodeClasses            []*awsv1.EC2NodeClass
	NodeClaims             []*karpv1.NodeClaim
	Nodes                  []*corev1.Node
	DaemonSets             []*appsv1.DaemonSet
	PodDisruptionBudgets   []*policyv1.PodDisruptionBudget
	StorageClasses         []*storagev1.StorageClass
	PersistentVolumes      []*corev1.PersistentVolume
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim
	Namespaces             []*corev1.Namespace
	Pods                   []*corev1.Pod
	// NodeOverlays are the overlays the controller applies: those it marks
	// Ready=False with reason FeatureGateOff (the NodeOverlay gate is off)
	// are left out, as it ignores them.
	NodeOverlays []*karpv1alpha1.NodeOverlay
	// Missing names the kinds whose API the cluster does not serve (e.g.
	// no Karpenter CRDs on a Cluster Autoscaler cluster); they are empty.
	Missing []string
}

// Count is the number of objects in d.
func (d *Dump) Count() int {
	return len(d.NodePools) + len(d.NodeClasses) + len(d.NodeClaims) + len(d.Nodes) + len(d.DaemonSets) +
		len(d.PodDisruptionBudgets) + len(d.StorageClasses) + len(d.PersistentVolumes) +
		len(d.PersistentVolumeClaims) + len(d.Namespaces) + len(d.Pods) + len(d.NodeOverlays)
}

// Read lists every kind of the dump through c (list only, PageSize objects
// per request) and sanitizes each object. It stops with ctx's error when
// ctx ends. A kind whose API is not served (no CRD) is recorded in
// Dump.Missing, not an error; a forbidden list is an error naming the kind.
func Read(ctx context.Context, c client.Reader, opts Options) (*Dump, error) {
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	d := &Dump{}
	r := reader{ctx: ctx, c: c, opts: opts, d: d}
	steps := []func() error{
		func() error {
			return each(r, "NodePools", func() *karpv1.NodePoolList { return &karpv1.NodePoolList{} }, func(l *karpv1.NodePoolList) int {
				for i := range l.Items {
					d.NodePools = append(d.NodePools, SanitizeNodePool(&l.Items[i]))
				}
				return len(l.Items)
			})
		},
		func() error {
			return each(r, "EC2NodeClasses", func() *awsv1.EC2NodeClassList { return &awsv1.EC2NodeClassList{} }, func(l *awsv1.EC2NodeClassList) int {
				for i := range l.Items {
					d.NodeClasses = append(d.NodeClasses, SanitizeNodeClass(&l.Items[i]))
				}
				return len(l.Items)
			})
		},
		func() error {
			return each(r, "NodeClaims", func() *karpv1.NodeClaimList { return &karpv1.NodeClaimList{} }, func(l *karpv1.NodeClaimList) int {
				for i := range l.Items {
					d.NodeClaims = append(d.NodeClaims, SanitizeNodeClaim(&l.Items[i]))
				}
				return len(l.Items)
			})
		},
		func() error {
			return each(r, "Nodes", func() *corev1.NodeList { return &corev1.NodeList{} }, func(l *corev1.NodeList) int {
				for i := range l.Items {
					d.Nodes = append(d.Nodes, SanitizeNode(&l.Items[i]))
				}
				return len(l.Items)
			})
		},
		func() error {
			return each(r, "DaemonSets", func() *appsv1.DaemonSetList { return &appsv1.DaemonSetList{} }, func(l *appsv1.DaemonSetList) int {
				for i := range l.Items {
					d.DaemonSets = append(d.DaemonSets, SanitizeDaemonSet(&l.Items[i]))
				}
				return len(l.Items)
			})
		},
		func() error {
			return each(r, "PodDisruptionBudgets", func() *policyv1.PodDisruptionBudgetList { return &policyv1.PodDisruptionBudgetList{} }, func(l *policyv1.PodDisruptionBudgetList) int {
				for i := range l.Items {
					d.PodDisruptionBudgets = append(d.PodDisruptionBudgets, SanitizePDB(&l.Items[i]))
				}
				return len(l.Items)
			})
		},
		func() error {
			return each(r, "StorageClasses", func() *storagev1.StorageClassList { return &storagev1.StorageClassList{} }, func(l *storagev1.StorageClassList) int {
				for i := range l.Items {
					d.StorageClasses = append(d.StorageClasses, SanitizeStorageClass(&l.Items[i]))
				}
				return len(l.Items)
			})
		},
		func() error {
			return each(r, "PersistentVolumes", func() *corev1.PersistentVolumeList { return &corev1.PersistentVolumeList{} }, func(l *corev1.PersistentVolumeList) int {
				for i := range l.Items {
					d.PersistentVolumes = append(d.PersistentVolumes, SanitizePV(&l.Items[i]))
				}
				return len(l.Items)
			})
		},
		func() error {
			return each(r, "PersistentVolumeClaims", func() *corev1.PersistentVolumeClaimList { return &corev1.PersistentVolumeClaimList{} }, func(l *corev1.PersistentVolumeClaimList) int {
				for i := range l.Items {
					d.PersistentVolumeClaims = append(d.PersistentVolumeClaims, SanitizePVC(&l.Items[i]))
				}
				return len(l.Items)
			})
		},
		func() error {
			gateOff := 0
			err := each(r, "NodeOverlays", func() *karpv1alpha1.NodeOverlayList { return &karpv1alpha1.NodeOverlayList{} }, func(l *karpv1alpha1.NodeOverlayList) int {
				for i := range l.Items {
					o := &l.Items[i]
					if c := meta.FindStatusCondition(o.Status.Conditions, "Ready"); c != nil && c.Status == metav1.ConditionFalse && c.Reason == OverlayGateOffReason {
						gateOff++
						continue
					}
					d.NodeOverlays = append(d.NodeOverlays, SanitizeNodeOverlay(o))
				}
				return len(l.Items)
			})
			if gateOff > 0 {
				fmt.Fprintf(r.opts.Progress, "snapshot: NodeOverlays: %d left out: the controller's NodeOverlay feature gate is off (Ready=False, %s)\n", gateOff, OverlayGateOffReason)
			}
			return err
		},
		func() error {
			return each(r, "Namespaces", func() *corev1.NamespaceList { return &corev1.NamespaceList{} }, func(l *corev1.NamespaceList) int {
				for i := range l.Items {
					d.Namespaces = append(d.Namespaces, SanitizeNamespace(&l.Items[i]))
				}
				return len(l.Items)
			})
		},
		func() error {
			return each(r, "Pods", func() *corev1.PodList { return &corev1.PodList{} }, func(l *corev1.PodList) int {
				for i := range l.Items {
					p := &l.Items[i]
					if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
						continue // finished pods take no capacity
					}
					d.Pods = append(d.Pods, SanitizePod(p))
				}
				return len(l.Items)
			})
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	d.sort()
	return d, nil
}

type reader struct {
	ctx  context.Context
	c    client.Reader
	opts Options
	d    *Dump
}

// each lists one kind page by page, handing every page to take.
// Each page decodes into a new list: the sanitized objects share maps and
// slices with the page they came from, which a reused list would overwrite.
func each[L client.ObjectList](r reader, kind string, newList func() L, take func(L) int) error {
	total, token, pages := 0, "", 0
	for {
		if err := r.ctx.Err(); err != nil {
			return fmt.Errorf("reading %s: %w", kind, context.Cause(r.ctx))
		}
		list := newList()
		err := r.c.List(r.ctx, list, client.Limit(r.opts.PageSize), client.Continue(token))
		switch {
		case err == nil:
		case meta.IsNoMatchError(err) || apierrors.IsNotFound(err) || runtime.IsNotRegisteredError(err):
			r.d.Missing = append(r.d.Missing, kind)
			fmt.Fprintf(r.opts.Progress, "snapshot: %s: not served by this cluster (no CRD); none written\n", kind)
			return nil
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			return fmt.Errorf("reading %s: %w", kind, err)
		case apierrors.IsResourceExpired(err):
			return fmt.Errorf("reading %s: the list changed too much while paging (%v); run snapshot again, or raise --page-size", kind, err)
		default:
			return fmt.Errorf("listing %s: %w", kind, err)
		}
		total += take(list)
		pages++
		token = list.GetContinue()
		if token == "" {
			break
		}
		fmt.Fprintf(r.opts.Progress, "snapshot: %s: %d read...\n", kind, total)
	}
	fmt.Fprintf(r.opts.Progress, "snapshot: %s: %d\n", kind, total)
	return nil
}

func byName[T interface{ GetName() string }](s []T) {
	slices.SortFunc(s, func(a, b T) int { return cmp.Compare(a.GetName(), b.GetName()) })
}

func byNamespacedName[T interface {
	GetName() string
	GetNamespace() string
}](s []T) {
	slices.SortFunc(s, func(a, b T) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
}

// sort orders every kind by (namespace, name), so the same cluster gives
// the same file.
func (d *Dump) sort() {
	byName(d.NodePools)
	byName(d.NodeClasses)
	byName(d.NodeClaims)
	byName(d.Nodes)
	byNamespacedName(d.DaemonSets)
	byNamespacedName(d.PodDisruptionBudgets)
	byName(d.StorageClasses)
	byName(d.PersistentVolumes)
	byNamespacedName(d.PersistentVolumeClaims)
	byName(d.Namespaces)
	byNamespacedName(d.Pods)
	byName(d.NodeOverlays)
}

// Objects returns every object of d in writing order: pools and classes
// first, then nodes and claims, daemons, budgets, storage, namespaces, and
// pods last.
func (d *Dump) Objects() []any {
	var out []any
	add := func(n int, get func(int) any) {
		for i := range n {
			out = append(out, get(i))
		}
	}
	add(len(d.NodePools), func(i int) any { return d.NodePools[i] })
	add(len(d.NodeClasses), func(i int) any { return d.NodeClasses[i] })
	add(len(d.NodeOverlays), func(i int) any { return d.NodeOverlays[i] })
	add(len(d.NodeClaims), func(i int) any { return d.NodeClaims[i] })
	add(len(d.Nodes), func(i int) any { return d.Nodes[i] })
	add(len(d.DaemonSets), func(i int) any { return d.DaemonSets[i] })
	add(len(d.PodDisruptionBudgets), func(i int) any { return d.PodDisruptionBudgets[i] })
	add(len(d.StorageClasses), func(i int) any { return d.StorageClasses[i] })
	add(len(d.PersistentVolumes), func(i int) any { return d.PersistentVolumes[i] })
	add(len(d.PersistentVolumeClaims), func(i int) any { return d.PersistentVolumeClaims[i] })
	add(len(d.Namespaces), func(i int) any { return d.Namespaces[i] })
	add(len(d.Pods), func(i int) any { return d.Pods[i] })
	return out
}

// WriteYAML writes d as a multi-document YAML stream, one object per
// document, with header as leading comment lines (each prefixed "# ").
func (d *Dump) WriteYAML(w io.Writer, header []string) error {
	var buf bytes.Buffer
	for _, h := range header {
		fmt.Fprintf(&buf, "# %s\n", h)
	}
	for i, o := range d.Objects() {
		data, err := encode(o)
		if err != nil {
			return fmt.Errorf("encoding object %d: %w", i+1, err)
		}
		buf.WriteString("---\n")
		buf.Write(data)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// encode writes o as YAML without the noise typed encoders leave: null
// fields (creationTimestamp: null), an empty top-level status, and a
// Node's zero nodeInfo and daemonEndpoints structs. Empty objects below the
// top level stay (emptyDir: {} means something).
func encode(o any) ([]byte, error) {
	raw, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	dropNulls(m)
	if pdb, ok := o.(*policyv1.PodDisruptionBudget); ok && pdb.Status.ObservedGeneration == 0 {
		delete(m, "status") // never computed: its zeros are not an allowance
	}
	if st, ok := m["status"].(map[string]any); ok {
		if _, isNode := o.(*corev1.Node); isNode {
			delete(st, "nodeInfo")
			delete(st, "daemonEndpoints")
		}
		if len(st) == 0 {
			delete(m, "status")
		}
	}
	return yaml.Marshal(m)
}

func dropNulls(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
				continue
			}
			dropNulls(e)
		}
	case []any:
		for _, e := range t {
			dropNulls(e)
		}
	}
}

// Cluster returns d as the snapshot the engine is built from. It shares
// d's objects.
func (d *Dump) Cluster() *snapshot.Cluster {
	return &snapshot.Cluster{
		NodePools: d.NodePools, NodeClasses: d.NodeClasses, Nodes: d.Nodes, NodeClaims: d.NodeClaims,
		Pods: d.Pods, DaemonSets: d.DaemonSets, PersistentVolumeClaims: d.PersistentVolumeClaims,
		PersistentVolumes: d.PersistentVolumes, StorageClasses: d.StorageClasses, Namespaces: d.Namespaces,
		Overlays: d.NodeOverlays,
	}
}
