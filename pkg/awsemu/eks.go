package awsemu

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

var eksNameRe = regexp.MustCompile(`^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$`)

// serveEKS serves the EKS REST-JSON operations: GET /clusters (ListClusters)
// and GET /clusters/NAME (DescribeCluster); node groups (nodegroups.go) and
// access entries (accessentries.go).
func (e *Emulator) serveEKS(w http.ResponseWriter, req *request) {
	path := strings.TrimSuffix(req.httpReq.URL.Path, "/")
	name := strings.TrimPrefix(strings.TrimPrefix(path, "/clusters"), "/")
	switch {
	case req.httpReq.Method == http.MethodGet && name == "":
		req.action = "ListClusters"
	case req.httpReq.Method == http.MethodGet && !strings.Contains(name, "/"):
		req.action = "DescribeCluster"
	case e.serveNodeGroups(w, req, path): // nodegroups.go
		return
	case e.serveAccessEntries(w, req): // accessentries.go
		return
	default:
		req.action = "Unknown"
		writeRESTError(w, req, newAPIError("UnknownOperationException", 404, "%s %s is not implemented by the emulator", req.httpReq.Method, path))
		return
	}
	if aerr := e.begin(req); aerr != nil {
		e.finish(req, aerr)
		writeRESTError(w, req, aerr)
		return
	}
	var out any
	var aerr *apiError
	if req.action == "ListClusters" {
		out = map[string]any{"clusters": []string{e.opts.ClusterName}}
	} else {
		out, aerr = e.describeCluster(name)
	}
	e.finish(req, aerr)
	writeREST(w, req, out, aerr)
}

func (e *Emulator) describeCluster(name string) (any, *apiError) {
	if !eksNameRe.MatchString(name) {
		return nil, newAPIError("InvalidParameterException", 400, "The cluster name %q is invalid: it must match %s", name, eksNameRe.String())
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	o := e.opts
	if name != o.ClusterName {
		return nil, newAPIError("ResourceNotFoundException", 404, "No cluster found for name: %s.", name)
	}
	var subnets []string
	for _, s := range e.acct.subnets {
		subnets = append(subnets, s.ID)
	}
	cluster := map[string]any{
		"name":            o.ClusterName,
		"arn":             fmt.Sprintf("arn:aws:eks:%s:%s:cluster/%s", o.Region, o.AccountID, o.ClusterName),
		"createdAt":       epochSeconds(e.acct.created),
		"version":         o.KubernetesVersion,
		"roleArn":         fmt.Sprintf("arn:aws:iam::%s:role/eksClusterRole-%s", o.AccountID, o.ClusterName),
		"status":          "ACTIVE",
		"platformVersion": "eks.1",
		"resourcesVpcConfig": map[string]any{
			"subnetIds": subnets, "securityGroupIds": []string{e.acct.securityGroups[1].ID},
			"clusterSecurityGroupId": e.acct.securityGroups[1].ID, "vpcId": e.acct.vpc.ID,
			"endpointPublicAccess": true, "endpointPrivateAccess": true, "publicAccessCidrs": []string{"0.0.0.0/0"},
		},
		"kubernetesNetworkConfig": map[string]any{"serviceIpv4Cidr": o.ServiceCIDR, "ipFamily": "ipv4"},
		"accessConfig":            map[string]any{"authenticationMode": "API_AND_CONFIG_MAP"},
		"tags":                    map[string]string{},
	}
	if o.ClusterEndpoint != "" {
		cluster["endpoint"] = o.ClusterEndpoint
	}
	if len(o.ClusterCA) > 0 {
		cluster["certificateAuthority"] = map[string]string{"data": base64.StdEncoding.EncodeToString(o.ClusterCA)}
	}
	return map[string]any{"cluster": cluster}, nil
}

// writeREST answers a REST-JSON call (EKS and its node groups and access
// entries): the error when there is one, else out as JSON.
func writeREST(w http.ResponseWriter, req *request, out any, aerr *apiError) {
	if aerr != nil {
		writeRESTError(w, req, aerr)
		return
	}
	b, _ := json.Marshal(out)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-amzn-RequestId", req.requestID)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

func writeRESTError(w http.ResponseWriter, req *request, aerr *apiError) {
	b, _ := json.Marshal(map[string]string{"message": aerr.Message})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", aerr.Code)
	w.Header().Set("x-amzn-RequestId", req.requestID)
	w.WriteHeader(aerr.status())
	_, _ = w.Write(b)
}
