package k8stest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// startTimeout bounds the whole control plane start (measured 3.6–4 s on
// an idle machine; the shared test machines are much slower at times).
const startTimeout = 2 * time.Minute

// Cluster is a running control plane. Config and Client act as the
// harness's admin (group system:masters, through a static token): tests
// use them to set up and inspect, never to run the code under test.
type Cluster struct {
	Config *rest.Config
	Client *Admin
	// Kubeconfig is a file holding Config, for code that reads kubeconfigs.
	Kubeconfig string

	dir      string
	server   string
	caPEM    []byte
	children []*child // in start order: etcd first
}

// Start runs etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler with their state in dir, and returns once Pods can be
// created (the default ServiceAccount exists). The error wraps
// ErrNoBinaries when the binaries are not built. Stop ends them.
func Start(ctx context.Context, dir string) (*Cluster, error) {
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the control plane's directory: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	c := &Cluster{dir: dir}
	if err := c.start(ctx, bin); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context, bin string) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	etcd, err := startChild(c.dir, filepath.Join(bin, "etcd"), "etcd",
		"--name", "k8stest", "--data-dir", filepath.Join(c.dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "k8stest="+peerURL, "--unsafe-no-fsync", "--log-level", "warn")
	if err != nil {
		return err
	}
	c.children = append(c.children, etcd)
	if err := waitHTTP(ctx, etcd, &http.Client{Timeout: time.Second}, etcdURL+"/health", nil); err != nil {
		return err
	}

	token, err := c.writeSecrets()
	if err != nil {
		return err
	}
	c.server = "https://127.0.0.1:" + strconv.Itoa(ports[2])
	api, err := startChild(c.dir, filepath.Join(bin, "kube-apiserver"), "kube-apiserver",
		"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", strconv.Itoa(ports[2]),
		"--cert-dir", filepath.Join(c.dir, "certs"), "--endpoint-reconciler-type", "none",
		"--token-auth-file", filepath.Join(c.dir, "tokens.csv"), "--authorization-mode", "RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", filepath.Join(c.dir, "sa.pub"),
		"--service-account-signing-key-file", filepath.Join(c.dir, "sa.key"),
		"--service-cluster-ip-range", "10.96.0.0/16", "-v", "1",
		// pods/log reaches the test kubelet at the node's loopback address.
		"--kubelet-preferred-address-types", "InternalIP")
	if err != nil {
		return err
	}
	c.children = append(c.children, api)
	insecure := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: insecureTLS()}}
	if err := waitHTTP(ctx, api, insecure, c.server+"/readyz", map[string]string{"Authorization": "Bearer " + token}); err != nil {
		return err
	}
	if err := c.connect(token); err != nil {
		return err
	}

	// The controllers' and scheduler's API clients are not throttled below
	// what parallel tests ask of them (defaults: 20 and 50 requests/s).
	common := []string{"--kubeconfig", c.Kubeconfig, "--leader-elect=false", "--secure-port", "0", "-v", "1",
		"--kube-api-qps", "1000", "--kube-api-burst", "2000"}
	cm, err := startChild(c.dir, filepath.Join(bin, "kube-controller-manager"), "kube-controller-manager",
		append(common, "--service-account-private-key-file", filepath.Join(c.dir, "sa.key"),
			// A lost node is noticed within seconds (the kubelet renews its
			// Lease every leaseRenewal).
			"--node-monitor-grace-period", nodeGracePeriod.String(), "--node-monitor-period", "1s",
			"--root-ca-file", filepath.Join(c.dir, "ca.crt"), "--use-service-account-credentials=false")...)
	if err != nil {
		return err
	}
	c.children = append(c.children, cm)
	sched, err := startChild(c.dir, filepath.Join(bin, "kube-scheduler"), "kube-scheduler", common...)
	if err != nil {
		return err
	}
	c.children = append(c.children, sched)
	return c.waitDefaultServiceAccount(ctx)
}

// writeSecrets writes the static admin token and the service account
// signing key pair; it returns the token.
func (c *Cluster) writeSecrets() (string, error) {
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("making the admin token: %w", err)
	}
	token := hex.EncodeToString(raw)
	tokens := token + ",k8stest-admin,k8stest-admin,\"system:masters\"\n"
	if err := os.WriteFile(filepath.Join(c.dir, "tokens.csv"), []byte(tokens), 0o600); err != nil {
		return "", fmt.Errorf("writing the token file: %w", err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", fmt.Errorf("making the service account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", fmt.Errorf("encoding the service account key: %w", err)
	}
	priv := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(filepath.Join(c.dir, "sa.key"), priv, 0o600); err != nil {
		return "", fmt.Errorf("writing the service account key: %w", err)
	}
	if err := os.WriteFile(filepath.Join(c.dir, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600); err != nil {
		return "", fmt.Errorf("writing the service account key: %w", err)
	}
	return token, nil
}

// connect reads the apiserver's CA (its self-signed serving file is
// [leaf, CA]; clients get only the CA), writes the admin kubeconfig and
// builds the admin client.
func (c *Cluster) connect(token string) error {
	chain, err := os.ReadFile(filepath.Join(c.dir, "certs", "apiserver.crt"))
	if err != nil {
		return fmt.Errorf("reading the apiserver certificate: %w", err)
	}
	var last *pem.Block
	for rest := chain; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		last = b
	}
	if last == nil {
		return errors.New("the apiserver certificate file holds no certificate")
	}
	c.caPEM = pem.EncodeToMemory(last)
	if err := os.WriteFile(filepath.Join(c.dir, "ca.crt"), c.caPEM, 0o600); err != nil {
		return fmt.Errorf("writing the CA: %w", err)
	}
	c.Kubeconfig = filepath.Join(c.dir, "admin.kubeconfig")
	if err := c.WriteKubeconfig(c.Kubeconfig, token); err != nil {
		return err
	}
	// The admin client serves the test kubelets (every pod status write)
	// and the tests, which run in parallel: client-go's default of 5
	// requests/s would queue them for seconds.
	c.Config = &rest.Config{Host: c.server, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: c.caPEM}, QPS: 1000, Burst: 2000}
	c.Client, err = newAdmin(c.Config)
	if err != nil {
		return fmt.Errorf("building the admin client: %w", err)
	}
	return nil
}

// WriteKubeconfig writes a kubeconfig for this cluster that authenticates
// with token; its one context is named "k8stest".
func (c *Cluster) WriteKubeconfig(path, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["k8stest"] = &clientcmdapi.Cluster{Server: c.server, CertificateAuthorityData: c.caPEM}
	cfg.AuthInfos["k8stest"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["k8stest"] = &clientcmdapi.Context{Cluster: "k8stest", AuthInfo: "k8stest"}
	cfg.CurrentContext = "k8stest"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	return nil
}

// waitDefaultServiceAccount waits until the controller manager has made
// the default namespace's ServiceAccount: before it, admission refuses Pods.
func (c *Cluster) waitDefaultServiceAccount(ctx context.Context) error {
	for {
		_, err := c.Client.ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsNotFound(err) && ctx.Err() == nil {
			return fmt.Errorf("waiting for the default service account: %w", err)
		}
		if err := c.pause(ctx, "the default service account"); err != nil {
			return err
		}
	}
}

// pause waits a poll interval, failing when ctx ends or a child died.
func (c *Cluster) pause(ctx context.Context, what string) error {
	for _, ch := range c.children {
		if ch.exited() {
			return fmt.Errorf("%s exited (%v) while waiting for %s; last lines:\n%s", ch.name, ch.err, what, ch.tail(20))
		}
	}
	select {
	case <-ctx.Done():
		return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
	case <-time.After(50 * time.Millisecond):
		return nil
	}
}

// Stop kills the control plane's processes in reverse start order. It is
// safe to call twice.
func (c *Cluster) Stop() error {
	var errs []error
	for i := len(c.children) - 1; i >= 0; i-- {
		errs = append(errs, c.children[i].stop())
	}
	return errors.Join(errs...)
}

// waitHTTP polls url until it answers 200, failing early when ch exits.
func waitHTTP(ctx context.Context, ch *child, client *http.Client, url string, header map[string]string) error {
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("probing %s: %w", ch.name, err)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if ch.exited() {
			return fmt.Errorf("%s exited (%v) before it was ready; last lines:\n%s", ch.name, ch.err, ch.tail(20))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w; last lines:\n%s", ch.name, ctx.Err(), ch.tail(20))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// freePorts reserves n distinct loopback ports by holding listeners open
// until all are chosen.
func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	ports := make([]int, n)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		lns = append(lns, ln)
		ports[i] = ln.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}
