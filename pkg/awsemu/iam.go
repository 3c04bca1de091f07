package awsemu

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

const (
	iamVersion = "2010-05-08"
	iamXMLNS   = "https://iam.amazonaws.com/doc/2010-05-08/"
	iamTime    = "2006-01-02T15:04:05Z"
)

type queryHandler func(e *Emulator, req *request) (any, *apiError)

// iamOps are the IAM operations the emulator implements. Each runs with
// e.mu held. A nil result means the operation has no Result element.
var iamOps = map[string]queryHandler{
	"GetInstanceProfile":            (*Emulator).getInstanceProfile,
	"CreateInstanceProfile":         (*Emulator).createInstanceProfile,
	"AddRoleToInstanceProfile":      (*Emulator).addRoleToInstanceProfile,
	"RemoveRoleFromInstanceProfile": (*Emulator).removeRoleFromInstanceProfile,
	"DeleteInstanceProfile":         (*Emulator).deleteInstanceProfile,
	"TagInstanceProfile":            (*Emulator).tagInstanceProfile,
	"ListInstanceProfiles":          (*Emulator).listInstanceProfiles,
}

// serveQuery serves the awsQuery protocol (IAM).
func (e *Emulator) serveQuery(w http.ResponseWriter, req *request) {
	if req.action == "" {
		writeQueryError(w, req, newAPIError("MissingAction", 400, "Missing Action"))
		return
	}
	if aerr := e.begin(req); aerr != nil {
		e.finish(req, aerr)
		writeQueryError(w, req, aerr)
		return
	}
	h, ok := iamOps[req.action]
	if !ok {
		aerr := errInvalidAction("iam", req.action)
		e.finish(req, aerr)
		writeQueryError(w, req, aerr)
		return
	}
	e.mu.Lock()
	out, aerr := h(e, req)
	e.mu.Unlock()
	e.finish(req, aerr)
	if aerr != nil {
		writeQueryError(w, req, aerr)
		return
	}
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	buf.WriteString("<" + req.action + `Response xmlns="` + iamXMLNS + `">`)
	if out != nil {
		enc := xml.NewEncoder(&buf)
		if err := enc.EncodeElement(out, xml.StartElement{Name: xml.Name{Local: req.action + "Result"}}); err != nil {
			writeQueryError(w, req, newAPIError("ServiceFailure", 500, "encoding response: %v", err))
			return
		}
	}
	buf.WriteString("<ResponseMetadata><RequestId>" + req.requestID + "</RequestId></ResponseMetadata>")
	buf.WriteString("</" + req.action + "Response>")
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("x-amzn-RequestId", req.requestID)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

func writeQueryError(w http.ResponseWriter, req *request, aerr *apiError) {
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	buf.WriteString(`<ErrorResponse xmlns="` + iamXMLNS + `"><Error><Type>` + aerr.fault() + `</Type><Code>`)
	_ = xml.EscapeText(&buf, []byte(aerr.Code))
	buf.WriteString("</Code><Message>")
	_ = xml.EscapeText(&buf, []byte(aerr.Message))
	buf.WriteString("</Message></Error><RequestId>" + req.requestID + "</RequestId></ErrorResponse>")
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("x-amzn-RequestId", req.requestID)
	w.WriteHeader(aerr.status())
	_, _ = w.Write(buf.Bytes())
}

type iamTagXML struct {
	Key   string `xml:"Key"`
	Value string `xml:"Value"`
}

type iamRoleXML struct {
	Path                     string `xml:"Path"`
	RoleName                 string `xml:"RoleName"`
	RoleID                   string `xml:"RoleId"`
	Arn                      string `xml:"Arn"`
	CreateDate               string `xml:"CreateDate"`
	AssumeRolePolicyDocument string `xml:"AssumeRolePolicyDocument"`
}

type iamInstanceProfileXML struct {
	Path                string       `xml:"Path"`
	InstanceProfileName string       `xml:"InstanceProfileName"`
	InstanceProfileID   string       `xml:"InstanceProfileId"`
	Arn                 string       `xml:"Arn"`
	CreateDate          string       `xml:"CreateDate"`
	Roles               []iamRoleXML `xml:"Roles>member"`
	Tags                []iamTagXML  `xml:"Tags>member"`
}

type profileResultXML struct {
	InstanceProfile iamInstanceProfileXML `xml:"InstanceProfile"`
}

type listProfilesResultXML struct {
	InstanceProfiles struct {
		Members []iamInstanceProfileXML `xml:"member"`
	} `xml:"InstanceProfiles"`
	IsTruncated bool   `xml:"IsTruncated"`
	Marker      string `xml:"Marker,omitempty"`
}

// The EC2 trust policy of the seeded node role, URL-encoded as IAM returns it.
const nodeRoleTrustPolicy = "%7B%22Version%22%3A%222012-10-17%22%2C%22Statement%22%3A%5B%7B%22Effect%22%3A%22Allow%22%2C%22Principal%22%3A%7B%22Service%22%3A%22ec2.amazonaws.com%22%7D%2C%22Action%22%3A%22sts%3AAssumeRole%22%7D%5D%7D"

func (e *Emulator) profileToXML(p *instanceProfileRec) iamInstanceProfileXML {
	x := iamInstanceProfileXML{
		Path: p.Path, InstanceProfileName: p.Name, InstanceProfileID: p.ID, Arn: p.ARN,
		CreateDate: p.CreateDate.UTC().Format(iamTime), Roles: []iamRoleXML{}, Tags: []iamTagXML{},
	}
	for _, rn := range p.Roles {
		r := e.acct.roles[rn]
		if r == nil {
			continue
		}
		x.Roles = append(x.Roles, iamRoleXML{Path: r.Path, RoleName: r.Name, RoleID: r.ID, Arn: r.ARN,
			CreateDate: r.CreateDate.UTC().Format(iamTime), AssumeRolePolicyDocument: nodeRoleTrustPolicy})
	}
	for _, k := range sortedKeys(p.Tags) {
		x.Tags = append(x.Tags, iamTagXML{Key: k, Value: p.Tags[k]})
	}
	return x
}

var iamNameRe = regexp.MustCompile(`^[\w+=,.@-]{1,128}$`)

func iamValidationError(param, value, constraint string) *apiError {
	if value == "" {
		return newAPIError("ValidationError", 400, "1 validation error detected: Value null at '%s' failed to satisfy constraint: Member must not be null", param)
	}
	return newAPIError("ValidationError", 400, "1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: %s", value, param, constraint)
}

func profileName(p params) (string, *apiError) {
	n := p.Get("InstanceProfileName")
	if n == "" || !iamNameRe.MatchString(n) {
		return "", iamValidationError("instanceProfileName", n, `Member must satisfy regular expression pattern: [\w+=,.@-]+`)
	}
	return n, nil
}

func (e *Emulator) findProfile(p params) (*instanceProfileRec, *apiError) {
	n, aerr := profileName(p)
	if aerr != nil {
		return nil, aerr
	}
	prof := e.acct.profiles[n]
	if prof == nil {
		return nil, newAPIError("NoSuchEntity", 404, "Instance Profile %s cannot be found.", n)
	}
	return prof, nil
}

func (a *account) profileByARN(arn string) *instanceProfileRec {
	for _, p := range a.profiles {
		if p.ARN == arn {
			return p
		}
	}
	return nil
}

func (e *Emulator) getInstanceProfile(req *request) (any, *apiError) {
	prof, aerr := e.findProfile(req.params)
	if aerr != nil {
		return nil, aerr
	}
	return profileResultXML{InstanceProfile: e.profileToXML(prof)}, nil
}

func parseIAMTags(p params) (map[string]string, *apiError) {
	tags := map[string]string{}
	for _, t := range p.Items("Tags") {
		k := t.Get("Key")
		if k == "" || len(k) > 128 {
			return nil, iamValidationError("tags.member.key", k, "Member must have length between 1 and 128")
		}
		if strings.HasPrefix(strings.ToLower(k), "aws:") {
			return nil, newAPIError("InvalidInput", 400, "User-defined tag keys can't start with 'aws:'.")
		}
		if len(t.Get("Value")) > 256 {
			return nil, iamValidationError("tags.member.value", t.Get("Value"), "Member must have length less than or equal to 256")
		}
		tags[k] = t.Get("Value")
	}
	if len(tags) > 50 {
		return nil, newAPIError("LimitExceeded", 409, "The number of tags has reached the maximum limit of 50.")
	}
	return tags, nil
}

func (e *Emulator) createInstanceProfile(req *request) (any, *apiError) {
	p := req.params
	n, aerr := profileName(p)
	if aerr != nil {
		return nil, aerr
	}
	path := p.Get("Path")
	if path == "" {
		path = "/"
	}
	if !strings.HasPrefix(path, "/") || !strings.HasSuffix(path, "/") || len(path) > 512 {
		return nil, iamValidationError("path", path, `Member must satisfy regular expression pattern: (\u002F)|(\u002F[\u0021-\u007E]+\u002F)`)
	}
	if _, dup := e.acct.profiles[n]; dup {
		return nil, newAPIError("EntityAlreadyExists", 409, "Instance Profile %s already exists.", n)
	}
	tags, aerr := parseIAMTags(p)
	if aerr != nil {
		return nil, aerr
	}
	prof := &instanceProfileRec{
		Name: n, Path: path, Tags: tags, CreateDate: e.clock.Now(),
		ID:  "AIPA" + strings.ToUpper(fmt.Sprintf("%016x", e.rng.Uint64())),
		ARN: fmt.Sprintf("arn:aws:iam::%s:instance-profile%s%s", e.opts.AccountID, path, n),
	}
	e.acct.profiles[n] = prof
	return profileResultXML{InstanceProfile: e.profileToXML(prof)}, nil
}

func (e *Emulator) roleParam(p params) (*roleRec, *apiError) {
	rn := p.Get("RoleName")
	if rn == "" || !iamNameRe.MatchString(rn) {
		return nil, iamValidationError("roleName", rn, `Member must satisfy regular expression pattern: [\w+=,.@-]+`)
	}
	r := e.acct.roles[rn]
	if r == nil {
		return nil, newAPIError("NoSuchEntity", 404, "The role with name %s cannot be found.", rn)
	}
	return r, nil
}

func (e *Emulator) addRoleToInstanceProfile(req *request) (any, *apiError) {
	prof, aerr := e.findProfile(req.params)
	if aerr != nil {
		return nil, aerr
	}
	r, aerr := e.roleParam(req.params)
	if aerr != nil {
		return nil, aerr
	}
	if len(prof.Roles) >= 1 {
		return nil, newAPIError("LimitExceeded", 409, "Cannot exceed quota for InstanceSessionsPerInstanceProfile: 1")
	}
	prof.Roles = append(prof.Roles, r.Name)
	return nil, nil
}

func (e *Emulator) removeRoleFromInstanceProfile(req *request) (any, *apiError) {
	prof, aerr := e.findProfile(req.params)
	if aerr != nil {
		return nil, aerr
	}
	r, aerr := e.roleParam(req.params)
	if aerr != nil {
		return nil, aerr
	}
	for i, rn := range prof.Roles {
		if rn == r.Name {
			prof.Roles = append(prof.Roles[:i], prof.Roles[i+1:]...)
			return nil, nil
		}
	}
	return nil, newAPIError("NoSuchEntity", 404, "The role with name %s cannot be found in instance profile %s.", r.Name, prof.Name)
}

func (e *Emulator) deleteInstanceProfile(req *request) (any, *apiError) {
	prof, aerr := e.findProfile(req.params)
	if aerr != nil {
		return nil, aerr
	}
	if len(prof.Roles) > 0 {
		return nil, newAPIError("DeleteConflict", 409, "Cannot delete entity, must remove roles from instance profile first.")
	}
	delete(e.acct.profiles, prof.Name)
	return nil, nil
}

func (e *Emulator) tagInstanceProfile(req *request) (any, *apiError) {
	prof, aerr := e.findProfile(req.params)
	if aerr != nil {
		return nil, aerr
	}
	tags, aerr := parseIAMTags(req.params)
	if aerr != nil {
		return nil, aerr
	}
	if len(tags) == 0 {
		return nil, iamValidationError("tags", "", "")
	}
	merged := cloneTags(prof.Tags)
	if merged == nil {
		merged = map[string]string{}
	}
	for k, v := range tags {
		merged[k] = v
	}
	if len(merged) > 50 {
		return nil, newAPIError("LimitExceeded", 409, "The number of tags has reached the maximum limit of 50.")
	}
	prof.Tags = merged
	return nil, nil
}

func (e *Emulator) listInstanceProfiles(req *request) (any, *apiError) {
	p := req.params
	prefix := p.Get("PathPrefix")
	if prefix == "" {
		prefix = "/"
	}
	maxItems := int64(100)
	if n, ok, _ := p.Int("MaxItems"); ok {
		if n < 1 || n > 1000 {
			return nil, iamValidationError("maxItems", strconv.FormatInt(n, 10), "Member must have value between 1 and 1000")
		}
		maxItems = n
	} else if s := p.Get("MaxItems"); s != "" {
		return nil, iamValidationError("maxItems", s, "Member must be an integer")
	}
	start := 0
	if m := p.Get("Marker"); m != "" {
		off, ok := decodeToken("ListInstanceProfiles", m)
		if !ok {
			return nil, newAPIError("ValidationError", 400, "Invalid Marker: %s", m)
		}
		start = off
	}
	names := make([]string, 0, len(e.acct.profiles))
	for n, prof := range e.acct.profiles {
		if strings.HasPrefix(prof.Path, prefix) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	out := listProfilesResultXML{}
	out.InstanceProfiles.Members = []iamInstanceProfileXML{}
	from, to, next := page{start: start, size: int(maxItems)}.slice("ListInstanceProfiles", len(names))
	for _, n := range names[from:to] {
		out.InstanceProfiles.Members = append(out.InstanceProfiles.Members, e.profileToXML(e.acct.profiles[n]))
	}
	out.IsTruncated = next != ""
	out.Marker = next
	return out, nil
}
