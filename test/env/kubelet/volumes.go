package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// volumeFile is one file of a materialised volume.
type volumeFile struct {
	path string
	data []byte
	mode int32
}

// materializeVolumes writes every volume of pod into dir/<volume name> and
// returns the host folder of each volume by name.
func materializeVolumes(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, dir string) (map[string]string, error) {
	out := map[string]string{}
	var fsGroup *int64
	if pod.Spec.SecurityContext != nil {
		fsGroup = pod.Spec.SecurityContext.FSGroup
	}
	for _, v := range pod.Spec.Volumes {
		path := filepath.Join(dir, v.Name)
		var files []volumeFile
		var err error
		switch {
		case v.EmptyDir != nil:
			if err := os.MkdirAll(path, 0o777); err != nil {
				return nil, fmt.Errorf("failed to create emptyDir %s: %w", v.Name, err)
			}
			if err := os.Chmod(path, 0o777); err != nil {
				return nil, fmt.Errorf("failed to chmod emptyDir %s: %w", v.Name, err)
			}
			out[v.Name] = path
			continue
		case v.HostPath != nil:
			out[v.Name] = v.HostPath.Path
			continue
		case v.Secret != nil:
			files, err = secretFiles(ctx, cs, pod.Namespace, v.Secret.SecretName, v.Secret.Items,
				v.Secret.DefaultMode, v.Secret.Optional)
		case v.ConfigMap != nil:
			files, err = configMapFiles(ctx, cs, pod.Namespace, v.ConfigMap.Name, v.ConfigMap.Items,
				v.ConfigMap.DefaultMode, v.ConfigMap.Optional)
		case v.DownwardAPI != nil:
			files, err = downwardFiles(pod, v.DownwardAPI.Items, v.DownwardAPI.DefaultMode)
		case v.Projected != nil:
			files, err = projectedFiles(ctx, cs, pod, v.Projected)
		default:
			return nil, fmt.Errorf("volume %s: only emptyDir, hostPath, secret, configMap, downwardAPI and projected volumes are supported", v.Name)
		}
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		if err := writeVolume(path, files, fsGroup); err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		out[v.Name] = path
	}
	return out, nil
}

func writeVolume(dir string, files []volumeFile, fsGroup *int64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("failed to create folder: %w", err)
	}
	gid := -1
	if fsGroup != nil {
		gid = int(*fsGroup)
		if err := os.Chown(dir, 0, gid); err != nil {
			return fmt.Errorf("failed to chown folder: %w", err)
		}
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.Clean("/"+f.path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("failed to create folder for %s: %w", f.path, err)
		}
		if err := os.WriteFile(p, f.data, 0o600); err != nil {
			return fmt.Errorf("failed to write %s: %w", f.path, err)
		}
		if gid >= 0 {
			if err := os.Chown(p, 0, gid); err != nil {
				return fmt.Errorf("failed to chown %s: %w", f.path, err)
			}
		}
		if err := os.Chmod(p, os.FileMode(f.mode)&os.ModePerm); err != nil {
			return fmt.Errorf("failed to chmod %s: %w", f.path, err)
		}
	}
	return nil
}

func modeOr(item *int32, def *int32) int32 {
	if item != nil {
		return *item
	}
	if def != nil {
		return *def
	}
	return 0o644
}

func keyFiles(kind, name string, data map[string][]byte, items []corev1.KeyToPath, defaultMode *int32, optional bool) ([]volumeFile, error) {
	var files []volumeFile
	if len(items) == 0 {
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			files = append(files, volumeFile{path: k, data: data[k], mode: modeOr(nil, defaultMode)})
		}
		return files, nil
	}
	for _, it := range items {
		b, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("%s %s has no key %q", kind, name, it.Key)
		}
		files = append(files, volumeFile{path: it.Path, data: b, mode: modeOr(it.Mode, defaultMode)})
	}
	return files, nil
}

func secretFiles(ctx context.Context, cs kubernetes.Interface, ns, name string, items []corev1.KeyToPath, defaultMode *int32, optional *bool) ([]volumeFile, error) {
	opt := optional != nil && *optional
	s, err := cs.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && opt {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to read Secret %s: %w", name, err)
	}
	data := map[string][]byte{}
	for k, v := range s.Data {
		data[k] = v
	}
	for k, v := range s.StringData {
		data[k] = []byte(v)
	}
	return keyFiles("Secret", name, data, items, defaultMode, opt)
}

func configMapFiles(ctx context.Context, cs kubernetes.Interface, ns, name string, items []corev1.KeyToPath, defaultMode *int32, optional *bool) ([]volumeFile, error) {
	opt := optional != nil && *optional
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && opt {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to read ConfigMap %s: %w", name, err)
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return keyFiles("ConfigMap", name, data, items, defaultMode, opt)
}

func downwardFiles(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, defaultMode *int32) ([]volumeFile, error) {
	var files []volumeFile
	for _, it := range items {
		if it.FieldRef == nil {
			return nil, fmt.Errorf("downwardAPI item %s: only fieldRef is supported", it.Path)
		}
		v, err := fieldValue(pod, it.FieldRef.FieldPath)
		if err != nil {
			return nil, err
		}
		files = append(files, volumeFile{path: it.Path, data: []byte(v), mode: modeOr(it.Mode, defaultMode)})
	}
	return files, nil
}

func projectedFiles(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, p *corev1.ProjectedVolumeSource) ([]volumeFile, error) {
	var files []volumeFile
	for _, src := range p.Sources {
		var fs []volumeFile
		var err error
		switch {
		case src.Secret != nil:
			fs, err = secretFiles(ctx, cs, pod.Namespace, src.Secret.Name, src.Secret.Items, p.DefaultMode, src.Secret.Optional)
		case src.ConfigMap != nil:
			fs, err = configMapFiles(ctx, cs, pod.Namespace, src.ConfigMap.Name, src.ConfigMap.Items, p.DefaultMode, src.ConfigMap.Optional)
		case src.DownwardAPI != nil:
			fs, err = downwardFiles(pod, src.DownwardAPI.Items, p.DefaultMode)
		case src.ServiceAccountToken != nil:
			var tok string
			tok, err = requestToken(ctx, cs, pod, src.ServiceAccountToken)
			fs = []volumeFile{{path: src.ServiceAccountToken.Path, data: []byte(tok), mode: modeOr(nil, p.DefaultMode)}}
		default:
			return nil, fmt.Errorf("unsupported projected source")
		}
		if err != nil {
			return nil, err
		}
		files = append(files, fs...)
	}
	return files, nil
}

// requestToken asks the API server for a token of the pod's ServiceAccount,
// bound to the pod, as the kubelet does.
func requestToken(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, src *corev1.ServiceAccountTokenProjection) (string, error) {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	req := &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: src.ExpirationSeconds,
			BoundObjectRef: &authenticationv1.BoundObjectReference{
				Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID,
			},
		},
	}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	tr, err := cs.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("failed to request a token for ServiceAccount %s: %w", sa, err)
	}
	return tr.Status.Token, nil
}

// orLoopback is ip, or 127.0.0.1 when it is empty.
func orLoopback(ip string) string {
	if ip == "" {
		return "127.0.0.1"
	}
	return ip
}

// fieldValue resolves the downward API fields the environment supports
// (the addresses are those the kubelet set in the pod's status before
// starting it).
func fieldValue(pod *corev1.Pod, path string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return orLoopback(pod.Status.PodIP), nil
	case "status.hostIP", "status.hostIPs":
		return orLoopback(pod.Status.HostIP), nil
	case "metadata.labels", "metadata.annotations":
		m := pod.Labels
		if path == "metadata.annotations" {
			m = pod.Annotations
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&b, "%s=%q\n", k, m[k])
		}
		return b.String(), nil
	}
	for _, prefix := range []string{"metadata.labels['", "metadata.annotations['"} {
		if strings.HasPrefix(path, prefix) && strings.HasSuffix(path, "']") {
			key := strings.TrimSuffix(strings.TrimPrefix(path, prefix), "']")
			if strings.HasPrefix(prefix, "metadata.labels") {
				return pod.Labels[key], nil
			}
			return pod.Annotations[key], nil
		}
	}
	return "", fmt.Errorf("unsupported field path %q", path)
}
