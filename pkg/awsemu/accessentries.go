package awsemu

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// EKS access entries (REST JSON): CreateAccessEntry (POST
// /clusters/NAME/access-entries), ListAccessEntries (GET, the same path) and
// DescribeAccessEntry (GET /clusters/NAME/access-entries/PRINCIPAL_ARN, the
// ARN URL-encoded), for `dovetail migrate`'s check that the node role may
// join the cluster. Entries only record; nothing authenticates against
// them.

// AccessEntry is a recorded EKS access entry.
type AccessEntry struct {
	PrincipalARN     string
	Type             string
	Username         string
	KubernetesGroups []string
	Created          time.Time
}

type accessEntryState struct {
	mu      sync.Mutex
	entries map[string]*AccessEntry // by principal ARN
}

func (e *Emulator) accessState() *accessEntryState {
	e.accessOnce.Do(func() { e.accessEntries = &accessEntryState{entries: map[string]*AccessEntry{}} })
	return e.accessEntries
}

var (
	iamPrincipalRe   = regexp.MustCompile(`^arn:aws[a-z-]*:iam::[0-9]{12}:(role|user)/.+$`)
	accessEntryTypes = []string{"STANDARD", "EC2_LINUX", "EC2_WINDOWS", "FARGATE_LINUX", "EC2", "HYBRID_LINUX", "HYPERPOD_LINUX"}
)

// serveAccessEntries serves the access-entry paths; it reports whether the
// path was one of them.
func (e *Emulator) serveAccessEntries(w http.ResponseWriter, req *request) bool {
	path := strings.TrimSuffix(req.httpReq.URL.EscapedPath(), "/")
	rest, ok := strings.CutPrefix(path, "/clusters/")
	if !ok {
		return false
	}
	cluster, sub, ok := strings.Cut(rest, "/access-entries")
	if !ok || (sub != "" && !strings.HasPrefix(sub, "/")) {
		return false
	}
	principal := ""
	if sub != "" {
		p, err := url.PathUnescape(strings.TrimPrefix(sub, "/"))
		if err != nil || strings.Contains(strings.TrimPrefix(sub, "/"), "/") {
			return false // access policies and the like are not served
		}
		principal = p
	}
	method := req.httpReq.Method
	switch {
	case principal == "" && method == http.MethodGet:
		req.action = "ListAccessEntries"
	case principal == "" && method == http.MethodPost:
		req.action = "CreateAccessEntry"
	case principal != "" && method == http.MethodGet:
		req.action = "DescribeAccessEntry"
	default:
		return false
	}
	if aerr := e.begin(req); aerr != nil {
		e.finish(req, aerr)
		writeRESTError(w, req, aerr)
		return true
	}
	out, aerr := e.accessEntryOp(req, cluster, principal)
	e.finish(req, aerr)
	writeREST(w, req, out, aerr)
	return true
}

func (e *Emulator) accessEntryJSON(a *AccessEntry) map[string]any {
	o := e.opts
	groups := a.KubernetesGroups
	if groups == nil {
		groups = []string{}
	}
	return map[string]any{
		"clusterName":      o.ClusterName,
		"principalArn":     a.PrincipalARN,
		"kubernetesGroups": groups,
		"accessEntryArn":   fmt.Sprintf("arn:aws:eks:%s:%s:access-entry/%s/%s", o.Region, o.AccountID, o.ClusterName, strings.ReplaceAll(strings.TrimPrefix(a.PrincipalARN, "arn:aws:iam::"), ":", "/")),
		"createdAt":        epochSeconds(a.Created),
		"modifiedAt":       epochSeconds(a.Created),
		"tags":             map[string]string{},
		"username":         a.Username,
		"type":             a.Type,
	}
}

func (e *Emulator) accessEntryOp(req *request, cluster, principal string) (any, *apiError) {
	if cluster != e.opts.ClusterName {
		return nil, newAPIError("ResourceNotFoundException", 404, "No cluster found for name: %s.", cluster)
	}
	s := e.accessState()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch req.action {
	case "ListAccessEntries":
		q := req.httpReq.URL.Query()
		if q.Get("associatedPolicyArn") != "" {
			return nil, newAPIError("InvalidParameterException", 400, "the emulator records no access policies; associatedPolicyArn is not supported")
		}
		names := make([]string, 0, len(s.entries))
		for k := range s.entries {
			names = append(names, k)
		}
		sort.Strings(names)
		size := 100
		if v := q.Get("maxResults"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 100 {
				return nil, newAPIError("InvalidParameterException", 400, "maxResults %q must be between 1 and 100", v)
			}
			size = n
		}
		from := 0
		if tok := q.Get("nextToken"); tok != "" {
			n, err := strconv.Atoi(strings.TrimPrefix(tok, "emu-"))
			if err != nil || !strings.HasPrefix(tok, "emu-") || n < 0 || n > len(names) {
				return nil, newAPIError("InvalidParameterException", 400, "The nextToken is invalid.")
			}
			from = n
		}
		to := min(from+size, len(names))
		out := map[string]any{"accessEntries": names[from:to]}
		if to < len(names) {
			out["nextToken"] = "emu-" + strconv.Itoa(to)
		}
		return out, nil
	case "DescribeAccessEntry":
		a := s.entries[principal]
		if a == nil {
			return nil, newAPIError("ResourceNotFoundException", 404, "The specified principalArn could not be found. You can view your available access entries with 'list-access-entries'.")
		}
		return map[string]any{"accessEntry": e.accessEntryJSON(a)}, nil
	}
	var in struct {
		PrincipalArn     string   `json:"principalArn"`
		KubernetesGroups []string `json:"kubernetesGroups"`
		Username         string   `json:"username"`
		Type             string   `json:"type"`
	}
	if aerr := decodeJSON(req, &in); aerr != nil {
		return nil, aerr
	}
	if !iamPrincipalRe.MatchString(in.PrincipalArn) {
		return nil, newAPIError("InvalidParameterException", 400, "The principalArn parameter format is not valid")
	}
	if in.Type == "" {
		in.Type = "STANDARD"
	}
	if !slices.Contains(accessEntryTypes, in.Type) {
		return nil, newAPIError("InvalidParameterException", 400, "The type %s is not valid; valid types are %s", in.Type, strings.Join(accessEntryTypes, ", "))
	}
	if in.Type != "STANDARD" && (len(in.KubernetesGroups) > 0 || in.Username != "") {
		return nil, newAPIError("InvalidParameterException", 400, "kubernetesGroups and username can only be set for access entries of type STANDARD")
	}
	if s.entries[in.PrincipalArn] != nil {
		return nil, newAPIError("ResourceInUseException", 409, "The specified access entry resource is already in use on this cluster.")
	}
	user := in.Username
	switch {
	case user != "":
	case in.Type == "EC2_LINUX" || in.Type == "EC2_WINDOWS":
		user = "system:node:{{EC2PrivateDNSName}}"
	default:
		user = in.PrincipalArn
	}
	a := &AccessEntry{PrincipalARN: in.PrincipalArn, Type: in.Type, Username: user, KubernetesGroups: in.KubernetesGroups, Created: e.clock.Now()}
	s.entries[a.PrincipalARN] = a
	return map[string]any{"accessEntry": e.accessEntryJSON(a)}, nil
}
