package k8stest

import "crypto/tls"

// insecureTLS is for the readiness probe only, sent before the apiserver's
// CA can be read (the apiserver writes its self-signed chain as it starts).
// Everything after uses the CA.
func insecureTLS() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true} //nolint:gosec // loopback readiness probe before the CA exists
}
