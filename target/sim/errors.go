package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// Error types, vLLM's for the same errors (the router answers the same,
// router/errors.go): its serving layer's names for a bad request, an
// unknown model or route and an internal failure; for errors vLLM raises
// as HTTP exceptions, the status's reason phrase, as its handler writes it.
const (
	typeBadRequest       = "BadRequestError"
	typeNotFound         = "NotFoundError"
	typeInternal         = "InternalServerError"
	typeUnavailable      = "ServiceUnavailableError"
	typeMethodNotAllowed = "Method Not Allowed"
	typeTooLarge         = "Request Entity Too Large"
	typeTimeout          = "Request Timeout"
)

// apiError is an error answered in OpenAI's shape. Type is stable (the
// constants above) so clients can branch on it.
type apiError struct {
	status int
	typ    string
	msg    string
	param  string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: typeBadRequest, msg: fmt.Sprintf(format, args...), param: param}
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

func writeError(w http.ResponseWriter, e *apiError) {
	d := errorDetail{Message: e.msg, Type: e.typ, Code: e.status}
	if e.param != "" {
		d.Param = &e.param
	}
	b, _ := json.Marshal(errorBody{Error: d}) // plain structs: cannot fail
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	_, _ = w.Write(b)
}

// decodeStrict decodes one JSON value, rejecting unknown fields and
// trailing data.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// jsonError turns a decoding error into a 400 naming the field at fault.
func jsonError(err error) *apiError {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "body"
		}
		return badRequest(field, "invalid type for field %q: got JSON %s, want %s", field, te.Value, jsonKind(te.Type.Kind().String()))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return badRequest("", "malformed JSON at byte %d: %v", se.Offset, se)
	}
	return badRequest("", "malformed JSON: %v", err)
}

func jsonKind(k string) string {
	switch k {
	case "int", "int32", "int64":
		return "integer"
	case "float64", "float32":
		return "number"
	case "slice":
		return "array"
	case "struct", "map", "ptr":
		return "object"
	}
	return k
}
