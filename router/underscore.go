package router

import (
	"net/http"
	"strings"
)

// dropUnderscoreFields deletes the header fields whose names contain "_".
// Such a name is a valid token, but servers that map header names to
// variables (CGI, WSGI: HTTP_CONTENT_LENGTH) read "_" and "-" alike, so a
// worker behind one could take Content_Length or Transfer_Encoding for the
// field the router framed the request by, and read another request than
// the router sent. nginx drops them by default (underscores_in_headers
// off); keep_underscore_headers forwards them.
func dropUnderscoreFields(h http.Header) {
	for k := range h {
		if strings.IndexByte(k, '_') >= 0 {
			delete(h, k)
		}
	}
}
