package config

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// deployDir holds the deployment examples the README points to.
const deployDir = "../deploy"

// TestDeployExamples parses every YAML file under deploy/ (kproxy config
// files, Kubernetes manifests) and checks what they ask of kproxy: every
// flag in a kproxy container's args exists and parses, every KPROXY_*
// variable is one kproxy reads, every key of a kproxy config file (alone or
// in a ConfigMap) is a file key, and the broker-port mapping is consistent:
// each port named node-N is broker-port-base+N and the Service only routes
// to ports the container opens.
func TestDeployExamples(t *testing.T) {
	var files []string
	err := filepath.WalkDir(deployDir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("found %d YAML files under %s; want the laptop configs and the Kubernetes manifests", len(files), deployDir)
	}
	var containers int
	for _, f := range files {
		t.Run(strings.TrimPrefix(f, deployDir+"/"), func(t *testing.T) {
			docs := yamlDocs(t, f)
			if len(docs) == 0 || docs[0]["kind"] == nil {
				for _, d := range docs {
					checkFileKeys(t, f, d)
				}
				return
			}
			var deploy deployment
			for _, d := range docs {
				deploy.add(t, f, d)
			}
			containers += len(deploy.kproxy)
			deploy.check(t)
		})
	}
	if containers < 2 {
		t.Errorf("found %d kproxy containers in the manifests; want the sidecar and the Deployment", containers)
	}
}

// yamlDocs decodes every document of a YAML file.
func yamlDocs(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs []map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if d != nil {
			docs = append(docs, d)
		}
	}
}

// checkFileKeys checks that every key of a kproxy config file is one.
func checkFileKeys(t *testing.T, where string, cfg map[string]any) {
	t.Helper()
	known := map[string]bool{}
	for _, o := range Options() {
		known[o.Key] = o.Key != KeyConfig && !o.EnvOnly
	}
	if len(cfg) == 0 {
		t.Errorf("%s: an empty kproxy config", where)
	}
	for k := range cfg {
		if !known[k] {
			t.Errorf("%s: %q is not a kproxy config file key", where, k)
		}
	}
}

// deployment is what a manifest file says about kproxy.
type deployment struct {
	file string
	// kproxy are the containers running kproxy.
	kproxy []map[string]any
	// configs are kproxy config files found in ConfigMaps.
	configs []map[string]any
	// servicePorts are the target ports of the Services.
	servicePorts []string
}

func (d *deployment) add(t *testing.T, file string, doc map[string]any) {
	t.Helper()
	d.file = file
	switch doc["kind"] {
	case "ConfigMap":
		data, _ := doc["data"].(map[string]any)
		for name, v := range data {
			if !strings.HasPrefix(name, "kproxy") {
				continue
			}
			var cfg map[string]any
			if err := yaml.Unmarshal([]byte(v.(string)), &cfg); err != nil {
				t.Fatalf("%s: ConfigMap %s: %v", file, name, err)
			}
			checkFileKeys(t, file+" ConfigMap "+name, cfg)
			d.configs = append(d.configs, cfg)
		}
	case "Service":
		for _, p := range dig[[]any](doc, "spec", "ports") {
			d.servicePorts = append(d.servicePorts, yamlString(p.(map[string]any)["targetPort"]))
		}
	case "Deployment", "StatefulSet", "DaemonSet", "Pod":
		spec := dig[map[string]any](doc, "spec", "template", "spec")
		if doc["kind"] == "Pod" {
			spec = dig[map[string]any](doc, "spec")
		}
		for _, c := range dig[[]any](spec, "containers") {
			c := c.(map[string]any)
			if image, _ := c["image"].(string); strings.HasPrefix(image, "kproxy") || strings.Contains(image, "/kproxy") {
				d.kproxy = append(d.kproxy, c)
			}
		}
	}
}

// check checks each kproxy container's args and environment, and the
// ports against the broker-port mapping.
func (d *deployment) check(t *testing.T) {
	t.Helper()
	for _, c := range d.kproxy {
		var args []string
		for _, a := range dig[[]any](c, "args") {
			args = append(args, yamlString(a))
		}
		if len(args) == 0 || args[0] != "serve" {
			t.Errorf("%s: kproxy container args %v; want serve and its flags", d.file, args)
			continue
		}
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		Flags(fs)
		if err := fs.Parse(args[1:]); err != nil {
			t.Errorf("%s: kproxy serve %s: %v", d.file, strings.Join(args[1:], " "), err)
			continue
		}
		if fs.NArg() > 0 {
			t.Errorf("%s: kproxy serve: arguments that are no flags: %v", d.file, fs.Args())
		}
		envs := map[string]bool{}
		for _, o := range Options() {
			envs[o.EnvVar()] = true
		}
		for _, e := range dig[[]any](c, "env") {
			name := yamlString(e.(map[string]any)["name"])
			if strings.HasPrefix(name, EnvPrefix+"_") && !envs[name] {
				t.Errorf("%s: environment variable %s is not one kproxy reads", d.file, name)
			}
		}
		d.checkPorts(t, c, fs)
		if !fs.Lookup(KeyConfig).Changed {
			d.load(t, c, fs)
		}
	}
}

// load runs Load on a kproxy container configured by flags and
// environment alone (no config file, whose paths exist only in the Pod), with
// its environment, a Secret's value standing in as "from-a-secret": the whole
// configuration must be valid.
func (d *deployment) load(t *testing.T, c map[string]any, fs *pflag.FlagSet) {
	t.Helper()
	clearEnv(t)
	for _, e := range dig[[]any](c, "env") {
		e := e.(map[string]any)
		v := yamlString(e["value"])
		if e["valueFrom"] != nil {
			v = "from-a-secret"
		}
		t.Setenv(yamlString(e["name"]), v)
	}
	if _, err := Load(fs); err != nil {
		t.Errorf("%s: kproxy serve with this container's args and environment: %v", d.file, err)
	}
}

// checkPorts checks the container's ports named node-N against
// broker-port-base (a flag, or the ConfigMap's config), and that every
// Service target port is one of the container's.
func (d *deployment) checkPorts(t *testing.T, c map[string]any, fs *pflag.FlagSet) {
	t.Helper()
	base := ""
	for _, cfg := range d.configs {
		if v, ok := cfg[KeyBrokerPortBase]; ok {
			base = yamlString(v)
		}
	}
	if f := fs.Lookup(KeyBrokerPortBase); f.Changed {
		base = f.Value.String()
	}
	names := map[string]bool{}
	for _, p := range dig[[]any](c, "ports") {
		p := p.(map[string]any)
		name, port := yamlString(p["name"]), yamlString(p["containerPort"])
		names[name], names[port] = true, true
		if id, ok := strings.CutPrefix(name, "node-"); ok {
			n, err1 := strconv.Atoi(id)
			b, err2 := strconv.Atoi(base)
			if err1 != nil || err2 != nil || strconv.Itoa(b+n) != port {
				t.Errorf("%s: port %s is %s; want broker-port-base (%s) + %s", d.file, name, port, base, id)
			}
		}
	}
	for _, p := range d.servicePorts {
		if !names[p] {
			t.Errorf("%s: the Service routes to port %s, which the kproxy container does not open", d.file, p)
		}
	}
}

// dig follows keys through nested maps and returns the value there as T,
// or T's zero value.
func dig[T any](m map[string]any, keys ...string) T {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			var zero T
			return zero
		}
		v = mm[k]
	}
	out, _ := v.(T)
	return out
}

// yamlString is a scalar as text.
func yamlString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int:
		return strconv.Itoa(x)
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return ""
	}
	return ""
}
