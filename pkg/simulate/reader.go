package simulate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	autoscalingv1beta1 "github.com/dovetail-sh/dovetail/api/autoscaling/v1beta1"
	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail-sh/dovetail/api/karpenter/v1alpha1"
)

// Manifests are the objects read from the input files, in reading order,
// with where each came from.
type Manifests struct {
	NodePools              []*karpv1.NodePool
	NodeClasses            []*awsv1.EC2NodeClass
	NodeClaims             []*karpv1.NodeClaim
	Nodes                  []*corev1.Node
	Pods                   []*corev1.Pod
	Deployments            []*appsv1.Deployment
	ReplicaSets            []*appsv1.ReplicaSet
	StatefulSets           []*appsv1.StatefulSet
	ReplicationControllers []*corev1.ReplicationController
	// Services only give the selector of --scheduler-config's default
	// spreads (SpreadObjects).
	Services               []*corev1.Service
	Jobs                   []*batchv1.Job
	DaemonSets             []*appsv1.DaemonSet
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim
	PersistentVolumes      []*corev1.PersistentVolume
	StorageClasses         []*storagev1.StorageClass
	Namespaces             []*corev1.Namespace
	PodDisruptionBudgets   []*policyv1.PodDisruptionBudget
	NodeOverlays           []*karpv1alpha1.NodeOverlay
	CapacityBuffers        []*autoscalingv1beta1.CapacityBuffer
	PodTemplates           []*corev1.PodTemplate
	// ConfigMaps: only dovetail-commitments (pkg/commitment) is read.
	ConfigMaps []*corev1.ConfigMap

	origins map[ObjectKey]Origin
	// pdbAllowed are the PDBs whose document states
	// status.disruptionsAllowed (the decoded int32 cannot tell 0 from
	// absent).
	pdbAllowed map[ObjectKey]bool
}

// ObjectKey identifies an object: its kind, namespace ("" when
// cluster-scoped) and name.
type ObjectKey struct{ Kind, Namespace, Name string }

// Objects is how many objects were read.
func (m *Manifests) Objects() int { return len(m.origins) }

// Origin returns where the object was read from.
func (m *Manifests) Origin(k ObjectKey) (Origin, bool) {
	o, ok := m.origins[k]
	return o, ok
}

// kindInfo describes one accepted kind.
type kindInfo struct {
	apiVersion string
	namespaced bool
	// decode strictly decodes data into a new object and returns it with its
	// metadata.
	newObj func() any
	meta   func(any) *metav1.ObjectMeta
	add    func(*Manifests, any)
}

func kindOf[T any](apiVersion string, namespaced bool, meta func(*T) *metav1.ObjectMeta, add func(*Manifests, *T)) kindInfo {
	return kindInfo{
		apiVersion: apiVersion, namespaced: namespaced,
		newObj: func() any { return new(T) },
		meta:   func(o any) *metav1.ObjectMeta { return meta(o.(*T)) },
		add:    func(m *Manifests, o any) { add(m, o.(*T)) },
	}
}

var kinds = map[string]kindInfo{
	"NodePool": kindOf("karpenter.sh/v1", false, func(o *karpv1.NodePool) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(m *Manifests, o *karpv1.NodePool) { m.NodePools = append(m.NodePools, o) }),
	"NodeClaim": kindOf("karpenter.sh/v1", false, func(o *karpv1.NodeClaim) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(m *Manifests, o *karpv1.NodeClaim) { m.NodeClaims = append(m.NodeClaims, o) }),
	"EC2NodeClass": kindOf("karpenter.k8s.aws/v1", false, func(o *awsv1.EC2NodeClass) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(m *Manifests, o *awsv1.EC2NodeClass) { m.NodeClasses = append(m.NodeClasses, o) }),
	"Node": kindOf("v1", false, func(o *corev1.Node) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(m *Manifests, o *corev1.Node) { m.Nodes = append(m.Nodes, o) }),
	"Pod": kindOf("v1", true, func(o *corev1.Pod) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(m *Manifests, o *corev1.Pod) { m.Pods = append(m.Pods, o) }),
	"PersistentVolumeClaim": kindOf("v1", true, func(o *corev1.PersistentVolumeClaim) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(m *Manifests, o *corev1.PersistentVolumeClaim) {
			m.PersistentVolumeClaims = append(m.PersistentVolumeClaims, o)
		}),
	"PersistentVolume": kindOf("v1", false, func(o *corev1.PersistentVolume) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(m *Manifests, o *corev1.PersistentVolume) { m.PersistentVolumes = append(m.PersistentVolumes, o) }),
	"Namespace": kindOf("v1", false, func(o *corev1.Namespace) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(m *Manifests, o *corev1.Namespace) { m.Namespaces = append(m.Namespaces, o) }),
	"Deployment": kindOf("apps/v1", true, func(o *appsv1.Deployment) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(m *Manifests, o *appsv1.Deployment) { m.Deployments = append(m.Deployments, o) }),
	"ReplicaSet": kindOf("apps/v1", true, func(o *appsv1.ReplicaSet) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(m *Manifests, o *appsv1.ReplicaSet) { m.ReplicaSets = append(m.ReplicaSets, o) }),
	"StatefulSet": kindOf("apps/v1", true, func(o *appsv1.StatefulSet) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(m *Manifests, o *appsv1.StatefulSet) { m.StatefulSets = append(m.StatefulSets, o) }),
	"ReplicationController": kindOf("v1", true, func(o *corev1.ReplicationController) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(m *Manifests, o *corev1.ReplicationController) {
			m.ReplicationControllers = append(m.ReplicationControllers, o)
		}),
	"Service": kindOf("v1", true, func(o *corev1.Service) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(m *Manifests, o *corev1.Service) { m.Services = append(m.Services, o) }),
	"DaemonSet": kindOf("apps/v1", true, func(o *appsv1.DaemonSet) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(m *Manifests, o *appsv1.DaemonSet) { m.DaemonSets = append(m.DaemonSets, o) }),
	"Job": kindOf("batch/v1", true, func(o *batchv1.Job) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(m *Manifests, o *batchv1.Job) { m.Jobs = append(m.Jobs, o) }),
	"PodDisruptionBudget": kindOf("policy/v1", true, func(o *policyv1.PodDisruptionBudget) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(m *Manifests, o *policyv1.PodDisruptionBudget) {
			m.PodDisruptionBudgets = append(m.PodDisruptionBudgets, o)
		}),
	"NodeOverlay": kindOf("karpenter.sh/v1alpha1", false, func(o *karpv1alpha1.NodeOverlay) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(m *Manifests, o *karpv1alpha1.NodeOverlay) { m.NodeOverlays = append(m.NodeOverlays, o) }),
	"CapacityBuffer": kindOf("autoscaling.x-k8s.io/v1beta1", true, func(o *autoscalingv1beta1.CapacityBuffer) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(m *Manifests, o *autoscalingv1beta1.CapacityBuffer) {
			m.CapacityBuffers = append(m.CapacityBuffers, o)
		}),
	"ConfigMap": kindOf("v1", true, func(o *corev1.ConfigMap) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(m *Manifests, o *corev1.ConfigMap) { m.ConfigMaps = append(m.ConfigMaps, o) }),
	"PodTemplate": kindOf("v1", true, func(o *corev1.PodTemplate) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(m *Manifests, o *corev1.PodTemplate) { m.PodTemplates = append(m.PodTemplates, o) }),
	"StorageClass": kindOf("storage.k8s.io/v1", false, func(o *storagev1.StorageClass) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(m *Manifests, o *storagev1.StorageClass) { m.StorageClasses = append(m.StorageClasses, o) }),
}

// Kinds returns the accepted kinds, sorted.
func Kinds() []string {
	out := make([]string, 0, len(kinds)+1)
	for k := range kinds {
		out = append(out, k)
	}
	out = append(out, "List")
	slices.Sort(out)
	return out
}

// document is one YAML document of a file.
type document struct {
	index int // from 1
	line  int // first line, from 1
	// dataLine is the file's line of data's first line (the marker's own
	// line when content follows "--- " on it).
	dataLine int
	data     []byte
}

// splitDocuments splits a multi-document YAML stream on "---" lines. Every
// chunk counts as a document (so the numbers match what a reader counts),
// but chunks holding only comments and blank lines are dropped afterwards.
func splitDocuments(data []byte) []document {
	var docs []document
	cur := document{index: 1, line: 1, dataLine: 1}
	var buf bytes.Buffer
	flush := func() {
		cur.data = append([]byte(nil), buf.Bytes()...)
		if !blank(cur.data) {
			docs = append(docs, cur)
		}
		buf.Reset()
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), len(data)+1)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if t := strings.TrimRight(text, " \t\r"); t == "---" || strings.HasPrefix(t, "--- ") || strings.HasPrefix(t, "---\t") {
			// Content after the marker on the same line (e.g. "--- {a: 1}")
			// belongs to the next document.
			if line > 1 || buf.Len() > 0 {
				flush()
				cur = document{index: cur.index + 1, line: line}
			} else {
				cur.line = line
			}
			cur.dataLine = line + 1
			if rest := strings.TrimSpace(t[3:]); rest != "" && !strings.HasPrefix(rest, "#") {
				buf.WriteString(rest)
				buf.WriteByte('\n')
				cur.dataLine = line
			}
			continue
		}
		buf.WriteString(text)
		buf.WriteByte('\n')
	}
	flush()
	return docs
}

// yamlLine finds the line number in a YAML parser's error.
var yamlLine = regexp.MustCompile(`\bline (\d+)`)

func blank(data []byte) bool {
	for _, l := range bytes.Split(data, []byte("\n")) {
		t := bytes.TrimSpace(l)
		if len(t) > 0 && t[0] != '#' {
			return false
		}
	}
	return true
}

// Read parses one input file (multi-document YAML, or JSON) and adds its
// objects to m. file names the input in errors ("-" for stdin). Every
// problem is reported, not only the first: the error is InputErrors, each
// naming the file, the document number (from 1) and its first line, the
// object when known and the field path where possible. Objects of a
// document with errors are not added.
func (m *Manifests) Read(file string, data []byte) error {
	if m.origins == nil {
		m.origins = map[ObjectKey]Origin{}
	}
	var errs InputErrors
	for _, doc := range splitDocuments(data) {
		o := Origin{File: file, Document: doc.index, Line: doc.line}
		errs = append(errs, m.readDocument(o, doc.dataLine, doc.data)...)
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

func (m *Manifests) readDocument(o Origin, dataLine int, data []byte) InputErrors {
	raw, err := yaml.YAMLToJSONStrict(data) // a duplicate key is an error, not last-wins
	if err != nil {
		// The parser counts lines from the document's start: locate the
		// error by the file's line, in the position and the message.
		msg := err.Error()
		if sub := yamlLine.FindStringSubmatchIndex(msg); sub != nil {
			if n, aerr := strconv.Atoi(msg[sub[2]:sub[3]]); aerr == nil {
				o.Line = dataLine + n - 1
				msg = msg[:sub[2]] + strconv.Itoa(o.Line) + msg[sub[3]:]
			}
		}
		msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
		return InputErrors{o.errorf("", "", nil, fmt.Errorf("not valid YAML: %s", msg))}
	}
	raw = bytes.TrimSpace(raw)
	if bytes.Equal(raw, []byte("null")) {
		return nil
	}
	if len(raw) == 0 || raw[0] != '{' {
		return InputErrors{o.errorf("", "", nil, errors.New("a document must be an object with apiVersion and kind"))}
	}
	return m.readObject(o, raw, nil)
}

// readObject decodes one object (raw JSON); path is set for List items.
func (m *Manifests) readObject(o Origin, raw []byte, path *field.Path) InputErrors {
	var tm metav1.TypeMeta
	if err := json.Unmarshal(raw, &tm); err != nil {
		return InputErrors{o.errorf("", "", field.ErrorList{field.Invalid(pathOr(path, "kind"), string(raw[:min(len(raw), 40)]), "apiVersion and kind must be strings")}, nil)}
	}
	if tm.Kind == "" {
		return InputErrors{o.errorf("", "", field.ErrorList{field.Required(pathOr(path, "kind"), "every document needs apiVersion and kind")}, nil)}
	}
	if tm.Kind == "List" {
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			return InputErrors{o.errorf("List", "", field.ErrorList{field.Invalid(pathOr(path, "items"), "", "items must be a list of objects")}, nil)}
		}
		var errs InputErrors
		for i, item := range list.Items {
			p := field.NewPath("items").Index(i)
			if path != nil {
				p = path.Child("items").Index(i)
			}
			if t := bytes.TrimSpace(item); len(t) == 0 || t[0] != '{' {
				errs = append(errs, o.errorf("List", "", field.ErrorList{field.Invalid(p, string(t[:min(len(t), 40)]), "must be an object")}, nil))
				continue
			}
			errs = append(errs, m.readObject(o, item, p)...)
		}
		return errs
	}
	info, ok := kinds[tm.Kind]
	if !ok {
		return InputErrors{o.errorf(tm.Kind, "", field.ErrorList{field.NotSupported(pathOr(path, "kind"), tm.Kind, Kinds())}, nil)}
	}
	if tm.APIVersion != info.apiVersion {
		return InputErrors{o.errorf(tm.Kind, "", field.ErrorList{field.NotSupported(pathOr(path, "apiVersion"), tm.APIVersion, []string{info.apiVersion})}, nil)}
	}
	obj := info.newObj()
	strict, err := sjson.UnmarshalStrict(raw, obj)
	name := nameOf(raw)
	if err != nil {
		// The CRD's schema names every field it refuses (a bad duration,
		// an enum, a pattern); the decoder only the first.
		if fes := validateAgainstCRD(tm.APIVersion, tm.Kind, raw); len(fes) > 0 {
			if path != nil {
				fes = prefix(path, fes)
			}
			return InputErrors{o.errorf(tm.Kind, name, fes, nil)}
		}
		return InputErrors{o.errorf(tm.Kind, name, decodeErrors(raw, err, path, info.newObj), nil)}
	}
	if len(strict) > 0 {
		var fes field.ErrorList
		for _, se := range strict {
			p := pathOr(path, "")
			var fe sjson.FieldError
			if errors.As(se, &fe) && fe.FieldPath() != "" {
				p = pathOr(path, fe.FieldPath())
			}
			fes = append(fes, field.Forbidden(p, se.Error()))
		}
		return InputErrors{o.errorf(tm.Kind, name, fes, nil)}
	}
	meta := info.meta(obj)
	if !info.namespaced {
		meta.Namespace = ""
	} else if meta.Namespace == "" {
		meta.Namespace = metav1.NamespaceDefault
	}
	if meta.Name == "" {
		return InputErrors{o.errorf(tm.Kind, "", field.ErrorList{field.Required(pathOr(path, "metadata").Child("name"), "every object needs a name (generateName is not supported)")}, nil)}
	}
	// The API server's metadata rules (name, labels, annotations and
	// their total size, owner references, finalizers), then dovetail's
	// own checks and the CRD's, the most precise of each problem kept.
	fes := apivalidation.ValidateObjectMeta(meta, info.namespaced, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	fes = mostPrecise(append(fes, append(validate(tm.Kind, obj), validateAgainstCRD(tm.APIVersion, tm.Kind, raw)...)...))
	if len(fes) > 0 {
		if path != nil {
			fes = prefix(path, fes)
		}
		return InputErrors{o.errorf(tm.Kind, meta.Name, fes, nil)}
	}
	key := ObjectKey{Kind: tm.Kind, Namespace: meta.Namespace, Name: meta.Name}
	if prev, dup := m.origins[key]; dup {
		return InputErrors{o.errorf(tm.Kind, meta.Name, nil, fmt.Errorf("duplicate %s %s: already defined in %s (document %d)", tm.Kind, qualified(meta.Namespace, meta.Name), prev.File, prev.Document))}
	}
	m.origins[key] = o
	info.add(m, obj)
	if tm.Kind == "PodDisruptionBudget" && statesDisruptionsAllowed(raw) {
		if m.pdbAllowed == nil {
			m.pdbAllowed = map[ObjectKey]bool{}
		}
		m.pdbAllowed[key] = true
	}
	return nil
}

// mostPrecise drops an error when another names a field inside its field
// (the same problem, located better) or the same field before it.
func mostPrecise(fes field.ErrorList) field.ErrorList {
	var out field.ErrorList
	for i, e := range fes {
		keep := true
		for j, f := range fes {
			if i == j {
				continue
			}
			inside := strings.HasPrefix(f.Field, e.Field) && len(f.Field) > len(e.Field) &&
				(f.Field[len(e.Field)] == '.' || f.Field[len(e.Field)] == '[')
			if inside || (f.Field == e.Field && j < i) {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, e)
		}
	}
	return out
}

// statesDisruptionsAllowed reports whether an object's JSON has
// status.disruptionsAllowed.
func statesDisruptionsAllowed(raw []byte) bool {
	var v struct {
		Status struct {
			DisruptionsAllowed *int32 `json:"disruptionsAllowed"`
		} `json:"status"`
	}
	return json.Unmarshal(raw, &v) == nil && v.Status.DisruptionsAllowed != nil
}

func qualified(ns, name string) string {
	if ns == "" {
		return fmt.Sprintf("%q", name)
	}
	return fmt.Sprintf("%q", ns+"/"+name)
}

// pathOr returns p.child, or child as a root path when p is nil (a
// document's top-level object), or p itself for an empty child; a nil p and
// empty child give the pseudo path "<document>".
func pathOr(p *field.Path, child string) *field.Path {
	switch {
	case p == nil && child == "":
		return field.NewPath("<document>")
	case p == nil:
		return field.NewPath(child)
	case child == "":
		return p
	}
	return p.Child(child)
}

// indexOr is pathOr for a list index.
func indexOr(p *field.Path, i int) *field.Path {
	if p == nil {
		return field.NewPath(fmt.Sprintf("[%d]", i))
	}
	return p.Index(i)
}

func prefix(p *field.Path, fes field.ErrorList) field.ErrorList {
	for _, fe := range fes {
		fe.Field = p.String() + "." + fe.Field
	}
	return fes
}

// nameOf extracts metadata.name leniently, for error messages about an
// object that does not decode.
func nameOf(raw []byte) string {
	var v struct {
		Metadata struct {
			Name any `json:"name"`
		} `json:"metadata"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	if s, ok := v.Metadata.Name.(string); ok {
		return s
	}
	return ""
}

// quantityParents are the map keys whose values are quantities in the
// accepted kinds.
var quantityParents = map[string]bool{
	"requests": true, "limits": true, "capacity": true, "allocatable": true, "overhead": true, "hard": true,
}
