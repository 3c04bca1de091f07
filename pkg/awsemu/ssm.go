package awsemu

import (
	"fmt"
	"sort"
	"strings"
)

var ssmOps = map[string]jsonHandler{
	"GetParameter":  (*Emulator).ssmGetParameter,
	"GetParameters": (*Emulator).ssmGetParameters,
}

type ssmParameterJSON struct {
	Name             string       `json:"Name"`
	Type             string       `json:"Type"`
	Value            string       `json:"Value"`
	Version          int64        `json:"Version"`
	LastModifiedDate epochSeconds `json:"LastModifiedDate"`
	ARN              string       `json:"ARN"`
	DataType         string       `json:"DataType"`
	Selector         string       `json:"Selector,omitempty"`
}

func ssmValidation(msg string, args ...any) *apiError {
	return newAPIError("ValidationException", 400, msg, args...)
}

// lookupParameter resolves a parameter name, an ARN of one, or a name with
// a ":version" selector. Callers hold mu.
func (e *Emulator) lookupParameter(name string) (*ssmParam, string, bool) {
	if strings.HasPrefix(name, "arn:") {
		if _, rest, ok := strings.Cut(name, ":parameter"); ok {
			name = rest
		}
	}
	selector := ""
	if i := strings.LastIndexByte(name, ':'); i >= 0 {
		selector = name[i:]
		name = name[:i]
	}
	p := e.acct.ssm[name]
	if p == nil {
		return nil, selector, false
	}
	if selector != "" && selector != fmt.Sprintf(":%d", p.Version) {
		return nil, selector, false
	}
	return p, selector, true
}

func (e *Emulator) ssmParamJSON(p *ssmParam, selector string) ssmParameterJSON {
	account := e.opts.AccountID
	if strings.HasPrefix(p.Name, "/aws/service/") {
		account = "" // public parameters have no account in their ARN
	}
	return ssmParameterJSON{
		Name: p.Name, Type: "String", Value: p.Value, Version: p.Version,
		LastModifiedDate: epochSeconds(p.LastModified), DataType: p.DataType, Selector: selector,
		ARN: fmt.Sprintf("arn:aws:ssm:%s:%s:parameter%s", e.opts.Region, account, p.Name),
	}
}

func validParameterName(n string) bool {
	return n != "" && len(n) <= 2048
}

func (e *Emulator) ssmGetParameter(req *request) (any, *apiError) {
	var in struct {
		Name           string
		WithDecryption bool
	}
	if aerr := decodeJSON(req, &in); aerr != nil {
		return nil, aerr
	}
	if !validParameterName(in.Name) {
		return nil, ssmValidation("1 validation error detected: Value '%s' at 'name' failed to satisfy constraint: Member must have length between 1 and 2048", in.Name)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	p, sel, ok := e.lookupParameter(in.Name)
	if !ok {
		return nil, newAPIError("ParameterNotFound", 400, "Parameter %s not found.", in.Name)
	}
	return map[string]any{"Parameter": e.ssmParamJSON(p, sel)}, nil
}

func (e *Emulator) ssmGetParameters(req *request) (any, *apiError) {
	var in struct {
		Names          []string
		WithDecryption bool
	}
	if aerr := decodeJSON(req, &in); aerr != nil {
		return nil, aerr
	}
	if len(in.Names) == 0 || len(in.Names) > 10 {
		return nil, ssmValidation("1 validation error detected: Value '[%s]' at 'names' failed to satisfy constraint: Member must have length less than or equal to 10 and greater than or equal to 1", strings.Join(in.Names, ", "))
	}
	for _, n := range in.Names {
		if !validParameterName(n) {
			return nil, ssmValidation("1 validation error detected: Value '%s' at 'names' failed to satisfy constraint: Member must have length between 1 and 2048", n)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	params := []ssmParameterJSON{}
	invalid := []string{}
	seen := map[string]bool{}
	for _, n := range in.Names {
		if seen[n] {
			continue
		}
		seen[n] = true
		if p, sel, ok := e.lookupParameter(n); ok {
			params = append(params, e.ssmParamJSON(p, sel))
		} else {
			invalid = append(invalid, n)
		}
	}
	sort.Slice(params, func(i, j int) bool { return params[i].Name < params[j].Name })
	return map[string]any{"Parameters": params, "InvalidParameters": invalid}, nil
}

// SSMParameters returns the seeded SSM parameters (name -> value), for
// documentation and tests.
func (e *Emulator) SSMParameters() map[string]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]string, len(e.acct.ssm))
	for n, p := range e.acct.ssm {
		out[n] = p.Value
	}
	return out
}
