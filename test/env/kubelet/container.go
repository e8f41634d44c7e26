package kubelet

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// containerEnv builds the environment of container c: the image's, then the
// service variables, then envFrom, then env (later entries win), with
// $(VAR) references expanded as Kubernetes does.
func containerEnv(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, c *corev1.Container, img *image, apiHost string, apiPort int) ([]string, error) {
	vals := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	for _, kv := range img.Config.Env {
		k, v, _ := strings.Cut(kv, "=")
		set(k, v)
	}
	if _, ok := vals["PATH"]; !ok {
		set("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	}
	set("HOSTNAME", pod.Name)
	// The kubernetes Service's variables name the API server itself: there
	// is no Service proxy.
	port := strconv.Itoa(apiPort)
	hostPort := net.JoinHostPort(apiHost, port)
	set("KUBERNETES_SERVICE_HOST", apiHost)
	set("KUBERNETES_SERVICE_PORT", port)
	set("KUBERNETES_SERVICE_PORT_HTTPS", port)
	set("KUBERNETES_PORT", "tcp://"+hostPort)
	set("KUBERNETES_PORT_443_TCP", "tcp://"+hostPort)
	set("KUBERNETES_PORT_443_TCP_PROTO", "tcp")
	set("KUBERNETES_PORT_443_TCP_ADDR", apiHost)
	set("KUBERNETES_PORT_443_TCP_PORT", port)

	for _, from := range c.EnvFrom {
		var data map[string]string
		switch {
		case from.SecretRef != nil:
			s, err := cs.CoreV1().Secrets(pod.Namespace).Get(ctx, from.SecretRef.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) && from.SecretRef.Optional != nil && *from.SecretRef.Optional {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("envFrom Secret %s: %w", from.SecretRef.Name, err)
			}
			data = map[string]string{}
			for k, v := range s.Data {
				data[k] = string(v)
			}
		case from.ConfigMapRef != nil:
			cm, err := cs.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, from.ConfigMapRef.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) && from.ConfigMapRef.Optional != nil && *from.ConfigMapRef.Optional {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("envFrom ConfigMap %s: %w", from.ConfigMapRef.Name, err)
			}
			data = cm.Data
		default:
			continue
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			set(from.Prefix+k, data[k])
		}
	}

	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, expand(e.Value, vals))
			continue
		}
		v, ok, err := envValueFrom(ctx, cs, pod, e.ValueFrom)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if ok {
			set(e.Name, v)
		}
	}
	env := make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+vals[k])
	}
	return env, nil
}

func envValueFrom(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, from *corev1.EnvVarSource) (string, bool, error) {
	switch {
	case from.FieldRef != nil:
		v, err := fieldValue(pod, from.FieldRef.FieldPath)
		return v, err == nil, err
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		opt := ref.Optional != nil && *ref.Optional
		s, err := cs.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) && opt {
			return "", false, nil
		}
		if err != nil {
			return "", false, fmt.Errorf("failed to get Secret %s: %w", ref.Name, err)
		}
		b, ok := s.Data[ref.Key]
		if !ok {
			if opt {
				return "", false, nil
			}
			return "", false, fmt.Errorf("key %q not found in Secret %s", ref.Key, ref.Name)
		}
		return string(b), true, nil
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		opt := ref.Optional != nil && *ref.Optional
		cm, err := cs.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) && opt {
			return "", false, nil
		}
		if err != nil {
			return "", false, fmt.Errorf("failed to get ConfigMap %s: %w", ref.Name, err)
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			if opt {
				return "", false, nil
			}
			return "", false, fmt.Errorf("key %q not found in ConfigMap %s", ref.Key, ref.Name)
		}
		return v, true, nil
	}
	return "", false, fmt.Errorf("only fieldRef, secretKeyRef and configMapKeyRef are supported")
}

// expand replaces $(NAME) with the value of NAME when it is defined; $$
// escapes a dollar, as in Kubernetes.
func expand(s string, vals map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := vals[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// commandLine returns the argv of container c: command replaces the image
// entrypoint, args replace the image cmd (and a command alone drops the
// image cmd).
func commandLine(c *corev1.Container, img *image, env []string) ([]string, error) {
	vals := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vals[k] = v
	}
	var argv []string
	switch {
	case len(c.Command) > 0:
		argv = append(argv, c.Command...)
		argv = append(argv, c.Args...)
	case len(c.Args) > 0:
		argv = append(append(argv, img.Config.Entrypoint...), c.Args...)
	default:
		argv = append(append(argv, img.Config.Entrypoint...), img.Config.Cmd...)
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("container %s has no command and its image no entrypoint", c.Name)
	}
	for i := range argv {
		argv[i] = expand(argv[i], vals)
	}
	return argv, nil
}

// lookPath finds argv0 in the image's PATH when it has no slash.
func lookPath(root, argv0, pathEnv string) (string, error) {
	if strings.Contains(argv0, "/") {
		return argv0, nil
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" || !path.IsAbs(dir) {
			continue
		}
		p := path.Join(dir, argv0)
		hp, err := securePath(root, p)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(hp); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("executable %q not found in the image's PATH", argv0)
}

// identity returns uid, gid and supplementary groups of container c: its
// securityContext, else the pod's, else the image's User; fsGroup and
// supplementalGroups are added as supplementary groups.
func identity(pod *corev1.Pod, c *corev1.Container, img *image) (uint32, uint32, []uint32, error) {
	var uid, gid *int64
	if psc := pod.Spec.SecurityContext; psc != nil {
		uid, gid = psc.RunAsUser, psc.RunAsGroup
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			uid = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			gid = sc.RunAsGroup
		}
	}
	var u, g uint32
	userGID := uint32(0)
	if uid != nil {
		u = uint32(*uid)
		if _, pg, ok := passwdByUID(img.Root, u); ok {
			userGID = pg
		}
	} else if img.Config.User != "" {
		var err error
		u, userGID, err = parseImageUser(img.Root, img.Config.User)
		if err != nil {
			return 0, 0, nil, err
		}
	}
	g = userGID
	if gid != nil {
		g = uint32(*gid)
	}
	nonRoot := false
	if psc := pod.Spec.SecurityContext; psc != nil && psc.RunAsNonRoot != nil {
		nonRoot = *psc.RunAsNonRoot
	}
	if sc := c.SecurityContext; sc != nil && sc.RunAsNonRoot != nil {
		nonRoot = *sc.RunAsNonRoot
	}
	if nonRoot && u == 0 {
		return 0, 0, nil, fmt.Errorf("container %s has runAsNonRoot and would run as root", c.Name)
	}
	var groups []uint32
	if psc := pod.Spec.SecurityContext; psc != nil {
		if psc.FSGroup != nil {
			groups = append(groups, uint32(*psc.FSGroup))
		}
		for _, sg := range psc.SupplementalGroups {
			groups = append(groups, uint32(sg))
		}
	}
	return u, g, groups, nil
}

// parseImageUser reads an image User of the form user[:group], each a number
// or a name from the image's /etc/passwd and /etc/group.
func parseImageUser(root, user string) (uint32, uint32, error) {
	us, gs, hasGroup := strings.Cut(user, ":")
	var uid, gid uint32
	if n, err := strconv.ParseUint(us, 10, 32); err == nil {
		uid = uint32(n)
		if _, pg, ok := passwdByUID(root, uid); ok {
			gid = pg
		}
	} else {
		u, pg, ok := passwdByName(root, us)
		if !ok {
			return 0, 0, fmt.Errorf("image user %q not found in /etc/passwd", us)
		}
		uid, gid = u, pg
	}
	if hasGroup {
		if n, err := strconv.ParseUint(gs, 10, 32); err == nil {
			gid = uint32(n)
		} else {
			g, ok := groupByName(root, gs)
			if !ok {
				return 0, 0, fmt.Errorf("image group %q not found in /etc/group", gs)
			}
			gid = g
		}
	}
	return uid, gid, nil
}

func readColonFile(root, file string, fn func(fields []string) bool) {
	p, err := securePath(root, file)
	if err != nil {
		return
	}
	f, err := os.Open(p)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Split(sc.Text(), ":"); len(fields) >= 4 && fn(fields) {
			return
		}
	}
}

func passwdByName(root, name string) (uid, gid uint32, ok bool) {
	readColonFile(root, "/etc/passwd", func(f []string) bool {
		if f[0] != name {
			return false
		}
		u, err1 := strconv.ParseUint(f[2], 10, 32)
		g, err2 := strconv.ParseUint(f[3], 10, 32)
		uid, gid, ok = uint32(u), uint32(g), err1 == nil && err2 == nil
		return true
	})
	return
}

func passwdByUID(root string, id uint32) (name string, gid uint32, ok bool) {
	readColonFile(root, "/etc/passwd", func(f []string) bool {
		if f[2] != strconv.FormatUint(uint64(id), 10) {
			return false
		}
		g, err := strconv.ParseUint(f[3], 10, 32)
		name, gid, ok = f[0], uint32(g), err == nil
		return true
	})
	return
}

func groupByName(root, name string) (gid uint32, ok bool) {
	readColonFile(root, "/etc/group", func(f []string) bool {
		if f[0] != name {
			return false
		}
		g, err := strconv.ParseUint(f[2], 10, 32)
		gid, ok = uint32(g), err == nil
		return true
	})
	return
}
