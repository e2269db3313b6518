package router

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/autoinfer/autoinfer/router/policy"
)

// policyNeeds is the union of what the policies of the router's pools read
// from a request (policy.Needer).
func (r *Router) policyNeeds() policy.Needs {
	var n policy.Needs
	for _, p := range r.pools {
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
	err := json.Unmarshal(body, &obj)
	msg := "request body is not a valid JSON object"
	if err != nil {
		msg += ": " + err.Error()
	}
	return newAPIError(http.StatusBadRequest, ErrTypeInvalidRequest, msg)
}
