package router

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/autoinfer/autoinfer/router/policy"
)

// policyNeeds is the union of what the policies of the pools that route
// read from a request (policy.Needer): under PD the prefill and decode
// pools' (every request goes to them, servePD), not the default pool's,
// whose policy then picks nothing. Receipts read nothing of their own: the
// engines' held tokens come from the caller (Prompt.Held).
func (r *Router) policyNeeds() policy.Needs {
	var n policy.Needs
	for _, p := range r.pools {
		if r.pd != nil && p == r.pool {
			continue
		}
		if d, ok := p.policy.(policy.Needer); ok {
			x := d.Needs()
			n.Text, n.HashKey, n.SLO, n.Latency = n.Text || x.Text, n.HashKey || x.HashKey, n.SLO || x.SLO, n.Latency || x.Latency
		}
	}
	return n
}

// describe validates a routed request's body for its kind and fills in the
// request fields the policies read, and only those: the prompt text is
// extracted only when a policy matches on it, the hash key only when one
// places it. An inference body must be one JSON object either way; the
// types of its fields are the worker's to check.
func (r *Router) describe(req *http.Request, body []byte, kind routeKind) (policy.Request, *apiError) {
	var pr policy.Request
	need := r.policyNeeds()
	if kind == kindInference {
		if need.Text {
			if !startsObject(body) { // json.Unmarshal takes a bare null
				return pr, checkJSONObject(body)
			}
			model, text, apiErr := parseOpenAI(body)
			if apiErr != nil {
				return pr, apiErr
			}
			pr.Model, pr.Text = model, text
		} else if apiErr := checkJSONObject(body); apiErr != nil {
			return pr, apiErr
		}
	}
	if need.HashKey && kind != kindModels {
		pr.HashKey = hashKey(req, body, r.keys.hasAPI)
	}
	if need.SLO && kind == kindInference {
		var apiErr *apiError
		if pr.SLO, apiErr = sloHeaders(req); apiErr != nil {
			return pr, apiErr
		}
	}
	return pr, nil
}

func startsObject(body []byte) bool {
	t := bytes.TrimLeft(body, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// checkJSONObject accepts exactly one JSON object, in one linear pass
// without allocating; only a rejected body is decoded again, for the
// message.
func checkJSONObject(body []byte) *apiError {
	if startsObject(body) && validJSON(body) {
		return nil
	}
	var obj map[string]json.RawMessage
	return badJSON(json.Unmarshal(body, &obj))
}

// badJSON is the 400 for a body that is not one JSON object, err being
// what decoding it said (nil for a bare null). The message names the JSON
// at fault, never the Go type it was decoded into.
func badJSON(err error) *apiError {
	msg := "request body must be a JSON object, got null"
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		msg = fmt.Sprintf("request body is not valid JSON: %v (at byte %d)", se, se.Offset)
	case errors.As(err, &te) && te.Field == "":
		msg = "request body must be a JSON object, got JSON " + te.Value
	case errors.As(err, &te):
		e := newAPIError(http.StatusBadRequest, ErrTypeInvalidRequest, fmt.Sprintf("invalid type for field %q: got JSON %s", te.Field, te.Value))
		e.Param = te.Field
		return e
	case err != nil:
		msg = "request body is not a valid JSON object"
	}
	return newAPIError(http.StatusBadRequest, ErrTypeInvalidRequest, msg)
}
