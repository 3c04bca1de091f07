package awsemu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Publishing a newer image, as Amazon does when it releases a new EKS
// optimized AMI: the emulator registers a new image (a copy of the current
// one with a new id, version, name and creation date) and moves the SSM
// parameter to it, so that an EC2NodeClass resolving through that
// parameter (an @latest alias, or an ssmParameter selector term) sees a
// new AMI and its nodes drift.
//
// Admin API:
//
//	POST /_dovetail/images/publish   PublishImageRequest -> PublishImageResult
//
// ErrUnknownImageTarget (HTTP 404) is returned for an alias family or
// parameter the emulator does not have; other bad input is HTTP 400.

// PublishImageRequest names what to publish a newer image for: exactly one
// of Alias (family@latest, family one of al2023, al2, bottlerocket: every
// architecture and variant of the family's current images) or Parameter
// (one SSM parameter whose value is an image id).
type PublishImageRequest struct {
	Alias     string `json:"alias,omitempty"`
	Parameter string `json:"parameter,omitempty"`
}

// PublishedImage is one parameter moved to a new image.
type PublishedImage struct {
	Parameter        string `json:"parameter"`
	ParameterVersion int64  `json:"parameterVersion"`
	PreviousImageID  string `json:"previousImageId"`
	ImageID          string `json:"imageId"`
	Name             string `json:"name"`
	Version          string `json:"version"`
}

// PublishImageResult is the answer of POST /_dovetail/images/publish.
type PublishImageResult struct {
	Published []PublishedImage `json:"published"`
}

// ErrUnknownImageTarget is returned when no parameter matches the request.
var ErrUnknownImageTarget = errors.New("no such image parameter")

// aliasLatestSuffix is the last path element of each family's "latest"
// parameters.
var aliasLatestSuffix = map[string]string{
	"al2023":       "/recommended/image_id",
	"al2":          "/recommended/image_id",
	"bottlerocket": "/latest/image_id",
}

// PublishImage publishes a newer image for an alias or an SSM parameter
// (see PublishImageRequest) and returns what moved, sorted by parameter.
func (e *Emulator) PublishImage(req PublishImageRequest) (PublishImageResult, error) {
	if (req.Alias == "") == (req.Parameter == "") {
		return PublishImageResult{}, fmt.Errorf("give exactly one of alias and parameter")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var params []*ssmParam
	if req.Parameter != "" {
		p := e.acct.ssm[req.Parameter]
		if p == nil {
			return PublishImageResult{}, fmt.Errorf("parameter %s: %w", req.Parameter, ErrUnknownImageTarget)
		}
		if p.DataType != "aws:ec2:image" || e.acct.image(p.Value) == nil {
			return PublishImageResult{}, fmt.Errorf("parameter %s does not hold an image id of this emulator", req.Parameter)
		}
		params = append(params, p)
	} else {
		family, version, ok := strings.Cut(req.Alias, "@")
		if !ok || version == "" {
			return PublishImageResult{}, fmt.Errorf("alias %q: want family@latest", req.Alias)
		}
		family = strings.ToLower(family)
		suffix, known := aliasLatestSuffix[family]
		if !known {
			return PublishImageResult{}, fmt.Errorf("alias %q: family %q: %w (known: al2, al2023, bottlerocket)", req.Alias, family, ErrUnknownImageTarget)
		}
		if version != "latest" {
			return PublishImageResult{}, fmt.Errorf("alias %q pins version %s, which never moves: publish for %s@latest", req.Alias, version, family)
		}
		for _, p := range e.acct.ssm {
			if !strings.HasSuffix(p.Name, suffix) {
				continue
			}
			if img := e.acct.image(p.Value); img != nil && img.Family == family {
				params = append(params, p)
			}
		}
		if len(params) == 0 {
			return PublishImageResult{}, fmt.Errorf("alias %q: %w", req.Alias, ErrUnknownImageTarget)
		}
	}
	sort.Slice(params, func(i, j int) bool { return params[i].Name < params[j].Name })
	now := e.clock.Now().UTC().Truncate(time.Second)
	var out PublishImageResult
	for _, p := range params {
		out.Published = append(out.Published, e.publishLocked(p, now))
	}
	return out, nil
}

// publishLocked registers a newer copy of the parameter's image and points
// the parameter (and, for a "latest" parameter, a new versioned sibling)
// at it. Callers hold mu.
func (e *Emulator) publishLocked(p *ssmParam, now time.Time) PublishedImage {
	old := e.acct.image(p.Value)
	img := *old
	img.Tags = make(map[string]string, len(old.Tags))
	for k, v := range old.Tags {
		img.Tags[k] = v
	}
	img.RootDevices = append([]BlockDevice(nil), old.RootDevices...)
	img.ID = fmt.Sprintf("ami-0%016x", e.rng.Uint64())
	img.Version = e.nextImageVersionLocked(old)
	img.Name = strings.Replace(old.Name, old.Version, img.Version, 1)
	if img.Name == old.Name {
		img.Name = old.Name + "-" + img.Version
	}
	img.CreationDate = now
	if !now.After(old.CreationDate) {
		img.CreationDate = old.CreationDate.Add(time.Second)
	}
	e.acct.images = append(e.acct.images, &img)

	prev := p.Value
	p.Value, p.Version, p.LastModified = img.ID, p.Version+1, img.CreationDate
	// The versioned parameter next to a "latest" one, so that a pinned
	// alias of the new version resolves too.
	dir := p.Name[:strings.LastIndexByte(strings.TrimSuffix(p.Name, "/image_id"), '/')+1]
	var sibling string
	switch {
	case strings.HasSuffix(p.Name, "/recommended/image_id"):
		sibling = dir + img.Name + "/image_id"
	case strings.HasSuffix(p.Name, "/latest/image_id"):
		sibling = dir + img.Version + "/image_id"
	}
	if sibling != "" && e.acct.ssm[sibling] == nil {
		e.acct.ssm[sibling] = &ssmParam{Name: sibling, Value: img.ID, Version: 1, LastModified: img.CreationDate, DataType: p.DataType}
	}
	return PublishedImage{
		Parameter: p.Name, ParameterVersion: p.Version, PreviousImageID: prev,
		ImageID: img.ID, Name: img.Name, Version: img.Version,
	}
}

// nextImageVersionLocked returns a version newer than img's that no image
// of its family has: vYYYYMMDD (one day on) for the Amazon Linux families,
// the next minor release for Bottlerocket.
func (e *Emulator) nextImageVersionLocked(img *imageRec) string {
	taken := func(v string) bool {
		for _, other := range e.acct.images {
			if other.Family == img.Family && other.Variant == img.Variant && other.Architecture == img.Architecture && other.Version == v {
				return true
			}
		}
		return false
	}
	next := func(v string) string {
		if t, err := time.Parse("v20060102", v); err == nil {
			return t.AddDate(0, 0, 1).Format("v20060102")
		}
		parts := strings.Split(v, ".")
		if len(parts) == 3 {
			if minor, err := strconv.Atoi(parts[1]); err == nil {
				return fmt.Sprintf("%s.%d.0", parts[0], minor+1)
			}
		}
		return v + "-1"
	}
	v := next(img.Version)
	for taken(v) {
		v = next(v)
	}
	return v
}

func (e *Emulator) adminPublishImage(w http.ResponseWriter, r *http.Request) {
	reply := func(status int, v any) {
		b, _ := json.Marshal(v)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(b)
	}
	if r.Method != http.MethodPost {
		reply(http.StatusMethodNotAllowed, adminError{Error: fmt.Sprintf("%s %s: use POST", r.Method, r.URL.Path)})
		return
	}
	var req PublishImageRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil && !errors.Is(err, io.EOF) {
		reply(http.StatusBadRequest, adminError{Error: "decoding the request body: " + err.Error()})
		return
	}
	res, err := e.PublishImage(req)
	switch {
	case err == nil:
		reply(http.StatusOK, res)
	case errors.Is(err, ErrUnknownImageTarget):
		reply(http.StatusNotFound, adminError{Error: err.Error()})
	default:
		reply(http.StatusBadRequest, adminError{Error: err.Error()})
	}
}

// PublishImage publishes a newer image (see Emulator.PublishImage).
func (c *AdminClient) PublishImage(ctx context.Context, req PublishImageRequest) (PublishImageResult, error) {
	var out PublishImageResult
	err := c.do(ctx, http.MethodPost, "images/publish", req, &out)
	return out, err
}
