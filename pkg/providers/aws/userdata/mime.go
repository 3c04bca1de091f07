package userdata

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"net/textproto"
	"strings"
)

// Content types of MIME user data parts.
const (
	ContentTypeNodeConfig  = "application/node.eks.aws"
	ContentTypeShellScript = `text/x-shellscript; charset="us-ascii"`
	ContentTypeCloudConfig = "text/cloud-config"
)

// mimePart is one part of a multipart user data document.
type mimePart struct {
	contentType string
	body        string
}

// maxParts bounds how many parts a user data document may have (EC2 user
// data is at most 16 KiB anyway).
const maxParts = 256

// splitUserParts turns the user's user data into MIME parts: the parts of a
// MIME multipart document, or the whole value as one part whose content
// type is guessed from its first line.
func splitUserParts(family, data string) ([]mimePart, error) {
	trimmed := strings.TrimSpace(data)
	if trimmed == "" {
		return nil, nil
	}
	if isMIME(trimmed) {
		return parseMIME(family, data)
	}
	switch {
	case strings.HasPrefix(trimmed, "#!"):
		return []mimePart{{contentType: ContentTypeShellScript, body: data}}, nil
	case strings.HasPrefix(trimmed, "#cloud-config"):
		return []mimePart{{contentType: ContentTypeCloudConfig, body: data}}, nil
	case family == "AL2023" && looksLikeNodeConfig(trimmed):
		return []mimePart{{contentType: ContentTypeNodeConfig, body: data}}, nil
	}
	if family == "AL2023" {
		return nil, newError(family, "expected a MIME multipart document, a NodeConfig YAML document (apiVersion: node.eks.aws/...), a shell script (#!) or cloud-config (#cloud-config)")
	}
	return nil, newError(family, "expected a MIME multipart document, a shell script (#!) or cloud-config (#cloud-config)")
}

func isMIME(s string) bool {
	head, _, _ := strings.Cut(s, "\n\n")
	head = strings.ReplaceAll(head, "\r", "")
	for _, line := range strings.Split(head, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.EqualFold(strings.TrimSpace(k), "Content-Type") && strings.Contains(strings.ToLower(v), "multipart/") {
			return true
		}
	}
	return false
}

func looksLikeNodeConfig(s string) bool {
	return strings.Contains(s, "node.eks.aws/") && strings.Contains(s, "NodeConfig")
}

// parseMIME reads a multipart document's parts.
func parseMIME(family, data string) ([]mimePart, error) {
	msg, err := mail.ReadMessage(strings.NewReader(normalizeNewlines(data)))
	if err != nil {
		return nil, newError(family, "reading the MIME headers: %v", err)
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return nil, newError(family, "Content-Type header: %v", err)
	}
	if !strings.HasPrefix(mediaType, "multipart/") {
		return nil, newError(family, "Content-Type %q is not multipart", mediaType)
	}
	b := params["boundary"]
	if b == "" {
		return nil, newError(family, "Content-Type has no boundary parameter")
	}
	r := multipart.NewReader(msg.Body, b)
	var parts []mimePart
	for i := 1; ; i++ {
		p, err := r.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, newError(family, "MIME part %d: %v", i, err)
		}
		if i > maxParts {
			return nil, newError(family, "more than %d MIME parts", maxParts)
		}
		body, err := io.ReadAll(p)
		if err != nil {
			return nil, newError(family, "MIME part %d: %v", i, err)
		}
		ct := p.Header.Get("Content-Type")
		if ct == "" {
			ct = "text/plain"
		}
		parts = append(parts, mimePart{contentType: ct, body: string(body)})
	}
	if len(parts) == 0 {
		return nil, newError(family, "the MIME document has no parts")
	}
	return parts, nil
}

func normalizeNewlines(s string) string {
	return strings.ReplaceAll(s, "\r\n", "\n")
}

// writeMIME renders parts as a multipart/mixed document with a boundary
// that occurs in no part.
func writeMIME(parts []mimePart) string {
	bnd := boundary(parts)
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=%q\n\n", bnd)
	for _, p := range parts {
		fmt.Fprintf(&buf, "--%s\n", bnd)
		h := textproto.MIMEHeader{}
		h.Set("Content-Type", p.contentType)
		fmt.Fprintf(&buf, "Content-Type: %s\n\n", h.Get("Content-Type"))
		buf.WriteString(p.body)
		// The line break before a delimiter belongs to the delimiter
		// (RFC 2046), so the body comes back exactly as written.
		buf.WriteByte('\n')
	}
	fmt.Fprintf(&buf, "--%s--\n", bnd)
	return buf.String()
}
