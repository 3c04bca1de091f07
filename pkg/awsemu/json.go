package awsemu

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"
)

// jsonHandler serves one JSON-protocol operation. Handlers lock e.mu
// themselves (SQS long polls must not hold it while waiting).
type jsonHandler func(e *Emulator, req *request) (any, *apiError)

// serveJSON serves the AWS JSON 1.0/1.1 protocols (SSM, SQS, Pricing).
func (e *Emulator) serveJSON(w http.ResponseWriter, req *request, version string, ops map[string]jsonHandler) {
	if aerr := e.begin(req); aerr != nil {
		e.finish(req, aerr)
		writeJSONError(w, req, aerr)
		return
	}
	h, ok := ops[req.action]
	if !ok {
		aerr := newAPIError("UnknownOperationException", 400, "The operation %s is not implemented by the emulator", req.action)
		e.finish(req, aerr)
		writeJSONError(w, req, aerr)
		return
	}
	out, aerr := h(e, req)
	e.finish(req, aerr)
	if aerr != nil {
		writeJSONError(w, req, aerr)
		return
	}
	b, err := json.Marshal(out)
	if err != nil {
		writeJSONError(w, req, newAPIError("InternalFailure", 500, "encoding response: %v", err))
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-"+version)
	w.Header().Set("x-amzn-RequestId", req.requestID)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

func writeJSONError(w http.ResponseWriter, req *request, aerr *apiError) {
	typ := aerr.Code
	if req.service == "sqs" {
		typ = "com.amazonaws.sqs#" + aerr.Code
	}
	b, _ := json.Marshal(map[string]string{"__type": typ, "message": aerr.Message})
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if req.service == "sqs" {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	}
	w.Header().Set("X-Amzn-ErrorType", aerr.Code)
	if aerr.QueryCode != "" {
		w.Header().Set("x-amzn-query-error", aerr.QueryCode+";"+aerr.fault())
	}
	w.Header().Set("x-amzn-RequestId", req.requestID)
	w.WriteHeader(aerr.status())
	_, _ = w.Write(b)
}

// decodeJSON decodes a request body; an empty body is an empty object.
func decodeJSON(req *request, v any) *apiError {
	body := bytes.TrimSpace(req.body)
	if len(body) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return newAPIError("SerializationException", 400, "could not decode the request body: %v", err)
	}
	return nil
}

// epochSeconds renders a timestamp the way the JSON protocols do: seconds
// since the epoch with a fraction.
type epochSeconds time.Time

func (t epochSeconds) MarshalJSON() ([]byte, error) {
	tt := time.Time(t)
	return json.Marshal(float64(tt.UnixMilli()) / 1000)
}
