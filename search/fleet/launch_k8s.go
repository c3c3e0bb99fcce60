package fleet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// K8sLauncher applies the generated manifest with kubectl and deletes it
// at the end. It needs kubectl configured for a cluster that can reach
// the coordinator.
type K8sLauncher struct {
	Config    LaunchConfig
	Namespace string
	N         int
	// Image is the container image holding kevolve-mcp and a Python with
	// torch (default DefaultImage).
	Image string

	path string
}

// Describe says what runs.
func (l *K8sLauncher) Describe() string {
	return fmt.Sprintf("%d Kubernetes workers in namespace %s", l.N, l.Namespace)
}

func (l *K8sLauncher) manifest() (string, error) {
	return Manifest(ManifestOptions{Name: l.Config.Name, Namespace: l.Namespace, Replicas: l.N, Image: l.Image,
		Coordinator: l.Config.Coordinator, GPUs: l.Config.GPUsPerNode, WorkerArgs: l.Config.WorkerArgs, Kind: "StatefulSet"})
}

// Start writes the manifest and applies it.
func (l *K8sLauncher) Start(ctx context.Context) error {
	m, err := l.manifest()
	if err != nil {
		return err
	}
	dir := l.Config.LogDir
	if dir == "" {
		dir = os.TempDir()
	}
	os.MkdirAll(dir, 0o755)
	l.path = filepath.Join(dir, l.Config.Name+"-workers.yaml")
	if err := os.WriteFile(l.path, []byte(m), 0o644); err != nil {
		return err
	}
	secret := SecretName(l.Config.Name)
	// The token goes through the environment into a Secret, never argv.
	env := append(os.Environ(), "KEVOLVE_TOKEN="+l.Config.Token)
	if _, err := runTool(ctx, time.Minute, env, "", "sh", "-c", "kubectl -n \"$1\" create secret generic \"$2\" --from-literal=token=\"$KEVOLVE_TOKEN\" --dry-run=client -o yaml | kubectl apply -f - && kubectl apply -f \"$3\"",
		"sh", l.Namespace, secret, l.path); err != nil {
		return fmt.Errorf("k8s workers: %w (kubectl configured for a cluster is needed; or create secret %s and apply %s yourself)", err, secret, l.path)
	}
	return nil
}

// Stop deletes what Start applied.
func (l *K8sLauncher) Stop(ctx context.Context) error {
	if l.path == "" {
		return nil
	}
	_, err := runTool(ctx, time.Minute, nil, "", "kubectl", "delete", "--ignore-not-found", "-f", l.path)
	return err
}
