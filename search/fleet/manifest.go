package fleet

import (
	"fmt"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// DefaultImage is the worker image the manifest names unless told
// otherwise: build it from the repository's binary on a CUDA base with a
// Python that has torch (see README).
const DefaultImage = "ghcr.io/kevolve/kevolve-mcp:latest"

// ManifestOptions describe the generated Kubernetes workers.
type ManifestOptions struct {
	Name        string // resource name prefix (default "kevolve")
	Namespace   string
	Kind        string // StatefulSet (long-lived, the default) or Job
	Replicas    int    // workers (one per node: anti-affinity spreads them)
	Image       string
	Coordinator string // URL the pods reach the coordinator at
	GPUs        int    // nvidia.com/gpu per worker (0 = none: a CPU worker)
	GPUResource string // default nvidia.com/gpu (amd.com/gpu for AMD)
	WorkerArgs  []string
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// SecretName is the Secret holding the workers' bearer token (key "token").
func SecretName(prefix string) string {
	if prefix == "" {
		prefix = "kevolve"
	}
	return prefix + "-fleet-token"
}

// Manifest renders the workers as a Kubernetes StatefulSet (or Job). The
// token comes from Secret SecretName(Name), key "token":
//
//	kubectl -n NS create secret generic kevolve-fleet-token --from-literal=token=$KEVOLVE_TOKEN
func Manifest(o ManifestOptions) (string, error) {
	if o.Name == "" {
		o.Name = "kevolve"
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.Kind == "" {
		o.Kind = "StatefulSet"
	}
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	if o.Image == "" {
		o.Image = DefaultImage
	}
	if o.GPUResource == "" {
		o.GPUResource = "nvidia.com/gpu"
	}
	for _, s := range []string{o.Name, o.Namespace} {
		if !dnsLabel.MatchString(s) || len(s) > 50 {
			return "", fmt.Errorf("manifest: %q is not a Kubernetes name (lower-case letters, digits and '-')", s)
		}
	}
	if o.Coordinator == "" || !(strings.HasPrefix(o.Coordinator, "http://") || strings.HasPrefix(o.Coordinator, "https://")) {
		return "", fmt.Errorf("manifest: --coordinator must be the URL the pods reach the coordinator at (http://HOST:PORT), got %q", o.Coordinator)
	}
	if o.Kind != "StatefulSet" && o.Kind != "Job" {
		return "", fmt.Errorf("manifest: kind %q: use StatefulSet or Job", o.Kind)
	}
	name := o.Name + "-worker"
	labels := map[string]string{"app.kubernetes.io/name": "kevolve-worker", "app.kubernetes.io/instance": o.Name}
	args := append([]string{"worker", "--coordinator", o.Coordinator, "--name", "$(POD_NAME)"}, o.WorkerArgs...)
	container := map[string]any{
		"name":    "worker",
		"image":   o.Image,
		"command": []string{"kevolve-mcp"},
		"args":    args,
		"env": []any{
			map[string]any{"name": "POD_NAME", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.name"}}},
			map[string]any{"name": "KEVOLVE_TOKEN", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": SecretName(o.Name), "key": "token"}}},
		},
		// The candidates run in the worker's sandboxed Python children; the
		// container itself holds no privilege.
		"securityContext": map[string]any{"allowPrivilegeEscalation": false, "runAsNonRoot": true, "runAsUser": 1000},
	}
	if o.GPUs > 0 {
		container["resources"] = map[string]any{"limits": map[string]any{o.GPUResource: o.GPUs}}
	}
	pod := map[string]any{
		"metadata": map[string]any{"labels": labels},
		"spec": map[string]any{
			// SIGTERM drains: the worker finishes or releases its jobs.
			"terminationGracePeriodSeconds": 60,
			"containers":                    []any{container},
			"affinity": map[string]any{"podAntiAffinity": map[string]any{
				"preferredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{
					"weight": 100,
					"podAffinityTerm": map[string]any{
						"topologyKey":   "kubernetes.io/hostname",
						"labelSelector": map[string]any{"matchLabels": labels},
					},
				}},
			}},
		},
	}
	var obj map[string]any
	switch o.Kind {
	case "StatefulSet":
		pod["spec"].(map[string]any)["restartPolicy"] = "Always"
		obj = map[string]any{
			"apiVersion": "apps/v1", "kind": "StatefulSet",
			"metadata": map[string]any{"name": name, "namespace": o.Namespace, "labels": labels},
			"spec": map[string]any{
				"serviceName":         name,
				"replicas":            o.Replicas,
				"podManagementPolicy": "Parallel",
				"selector":            map[string]any{"matchLabels": labels},
				"template":            pod,
			},
		}
	case "Job":
		pod["spec"].(map[string]any)["restartPolicy"] = "OnFailure"
		obj = map[string]any{
			"apiVersion": "batch/v1", "kind": "Job",
			"metadata": map[string]any{"name": name, "namespace": o.Namespace, "labels": labels},
			"spec": map[string]any{
				"parallelism":  o.Replicas,
				"completions":  o.Replicas,
				"backoffLimit": 6,
				"template":     pod,
			},
		}
	}
	svc := map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": name, "namespace": o.Namespace, "labels": labels},
		"spec":     map[string]any{"clusterIP": "None", "selector": labels},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# kevolve-mcp fleet workers (generated by `kevolve-mcp worker manifest k8s`).\n")
	fmt.Fprintf(&b, "# First: kubectl -n %s create secret generic %s --from-literal=token=$KEVOLVE_TOKEN\n", o.Namespace, SecretName(o.Name))
	fmt.Fprintf(&b, "# Then:  kubectl apply -f THIS_FILE; the coordinator (evolve --listen ADDR --fleet-token T) must be reachable at %s\n", o.Coordinator)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	docs := []any{obj}
	if o.Kind == "StatefulSet" {
		docs = append(docs, svc)
	}
	for _, d := range docs {
		if err := enc.Encode(d); err != nil {
			return "", err
		}
	}
	enc.Close()
	return b.String(), nil
}
