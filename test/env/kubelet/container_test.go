package kubelet

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestExpand(t *testing.T) {
	vals := map[string]string{"A": "1", "B": "two"}
	for _, tc := range []struct{ name, in, want string }{
		{"a defined reference is replaced", "x-$(A)-y", "x-1-y"},
		{"an undefined reference stays as written", "$(C)", "$(C)"},
		{"$$ escapes a dollar", "$$(A)", "$(A)"},
		{"an unclosed reference stays", "$(A", "$(A"},
		{"a lone dollar stays", "cost $5", "cost $5"},
		{"several references", "$(A)$(B)", "1two"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := expand(tc.in, vals); got != tc.want {
				t.Fatalf("expand(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestCommandLine(t *testing.T) {
	img := &image{Config: v1.Config{Entrypoint: []string{"/entry"}, Cmd: []string{"default"}}}
	for _, tc := range []struct {
		name          string
		command, args []string
		want          []string
	}{
		{"no command nor args runs the image entrypoint and cmd", nil, nil, []string{"/entry", "default"}},
		{"args replace the image cmd", nil, []string{"a"}, []string{"/entry", "a"}},
		{"command replaces the entrypoint and drops the image cmd", []string{"/bin/x"}, nil, []string{"/bin/x"}},
		{"command and args", []string{"/bin/x"}, []string{"$(V)"}, []string{"/bin/x", "v"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := commandLine(&corev1.Container{Name: "c", Command: tc.command, Args: tc.args}, img, []string{"V=v"})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("argv %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := commandLine(&corev1.Container{Name: "c"}, &image{}, nil); err == nil {
		t.Fatal("a container with no command and no image entrypoint was accepted")
	}
}

func imageRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "etc"), 0o755))
	must(os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0::/:/bin/sh\nnonroot:x:65532:65532::/home:/bin/sh\napp:x:1000:2000::/app:/bin/sh\n"), 0o644))
	must(os.WriteFile(filepath.Join(root, "etc/group"), []byte("root:x:0:\nstaff:x:50:\n"), 0o644))
	must(os.MkdirAll(filepath.Join(root, "usr/bin"), 0o755))
	must(os.WriteFile(filepath.Join(root, "usr/bin/tool"), []byte("#!"), 0o755))
	must(os.Symlink("/usr/bin", filepath.Join(root, "bin")))
	return root
}

func TestIdentity(t *testing.T) {
	root := imageRoot(t)
	pod := func(psc *corev1.PodSecurityContext) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{SecurityContext: psc}}
	}
	for _, tc := range []struct {
		name      string
		pod       *corev1.Pod
		sc        *corev1.SecurityContext
		imageUser string
		uid, gid  uint32
		groups    []uint32
		wantErr   bool
	}{
		{name: "no user anywhere runs as root", pod: pod(nil), uid: 0, gid: 0},
		{name: "the image user by number takes its passwd group", pod: pod(nil), imageUser: "1000", uid: 1000, gid: 2000},
		{name: "the image user by name", pod: pod(nil), imageUser: "nonroot", uid: 65532, gid: 65532},
		{name: "the image user:group by names", pod: pod(nil), imageUser: "app:staff", uid: 1000, gid: 50},
		{name: "an unknown image user name is an error", pod: pod(nil), imageUser: "ghost", wantErr: true},
		{name: "runAsUser beats the image user", pod: pod(nil), sc: &corev1.SecurityContext{RunAsUser: ptr.To[int64](65532)}, imageUser: "1000", uid: 65532, gid: 65532},
		{name: "the container's runAsGroup beats the pod's", pod: pod(&corev1.PodSecurityContext{RunAsUser: ptr.To[int64](7), RunAsGroup: ptr.To[int64](8)}),
			sc: &corev1.SecurityContext{RunAsGroup: ptr.To[int64](9)}, uid: 7, gid: 9},
		{name: "fsGroup and supplementalGroups are supplementary groups", pod: pod(&corev1.PodSecurityContext{FSGroup: ptr.To[int64](65532), SupplementalGroups: []int64{5}}),
			imageUser: "1000", uid: 1000, gid: 2000, groups: []uint32{65532, 5}},
		{name: "runAsNonRoot refuses root", pod: pod(&corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}), wantErr: true},
		{name: "runAsNonRoot accepts the image's non-root user", pod: pod(nil), sc: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)}, imageUser: "65532", uid: 65532, gid: 65532},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uid, gid, groups, err := identity(tc.pod, &corev1.Container{Name: "c", SecurityContext: tc.sc}, &image{Root: root, Config: v1.Config{User: tc.imageUser}})
			if tc.wantErr {
				if err == nil {
					t.Fatalf("want an error, got uid %d", uid)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if uid != tc.uid || gid != tc.gid || !reflect.DeepEqual(groups, tc.groups) {
				t.Fatalf("identity %d:%d %v, want %d:%d %v", uid, gid, groups, tc.uid, tc.gid, tc.groups)
			}
		})
	}
}

func TestSecurePathKeepsLinksInsideTheRoot(t *testing.T) {
	root := imageRoot(t)
	if err := os.Symlink("/../../../../etc", filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, in, want string }{
		{"a plain path", "/usr/bin/tool", "/usr/bin/tool"},
		{"an absolute link resolves inside the root", "/bin/tool", "/usr/bin/tool"},
		{"dot-dot cannot leave the root", "/../../etc/passwd", "/etc/passwd"},
		{"a link pointing above the root stays inside", "/escape/passwd", "/etc/passwd"},
		{"a missing path is joined as is", "/captf/work/x", "/captf/work/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := securePath(root, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != filepath.Join(root, tc.want) {
				t.Fatalf("securePath(%q) = %q, want %q", tc.in, got, filepath.Join(root, tc.want))
			}
		})
	}
}

func TestLookPath(t *testing.T) {
	root := imageRoot(t)
	if got, err := lookPath(root, "tool", "/nowhere:/bin"); err != nil || got != "/bin/tool" {
		t.Fatalf("lookPath = %q, %v; want /bin/tool", got, err)
	}
	if _, err := lookPath(root, "missing", "/bin"); err == nil {
		t.Fatal("a missing executable was found")
	}
	if got, _ := lookPath(root, "/abs/prog", ""); got != "/abs/prog" {
		t.Fatalf("an absolute command was rewritten to %q", got)
	}
}

func TestKeyFilesModes(t *testing.T) {
	data := map[string][]byte{"a": []byte("A"), "b": []byte("B")}
	for _, tc := range []struct {
		name        string
		items       []corev1.KeyToPath
		defaultMode *int32
		optional    bool
		want        []volumeFile
		wantErr     bool
	}{
		{name: "all keys with the default 0644", want: []volumeFile{{"a", []byte("A"), 0o644}, {"b", []byte("B"), 0o644}}},
		{name: "defaultMode applies to every key", defaultMode: ptr.To[int32](0o440),
			want: []volumeFile{{"a", []byte("A"), 0o440}, {"b", []byte("B"), 0o440}}},
		{name: "items pick keys, paths and modes", defaultMode: ptr.To[int32](0o400),
			items: []corev1.KeyToPath{{Key: "b", Path: "sub/b", Mode: ptr.To[int32](0o600)}, {Key: "a", Path: "a"}},
			want:  []volumeFile{{"sub/b", []byte("B"), 0o600}, {"a", []byte("A"), 0o400}}},
		{name: "a missing item key is an error", items: []corev1.KeyToPath{{Key: "c", Path: "c"}}, wantErr: true},
		{name: "a missing item key of an optional source is skipped", optional: true, items: []corev1.KeyToPath{{Key: "c", Path: "c"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := keyFiles("Secret", "s", data, tc.items, tc.defaultMode, tc.optional)
			if tc.wantErr != (err != nil) {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("files %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestTerminationMessage(t *testing.T) {
	dir := t.TempDir()
	term, logs := filepath.Join(dir, "term"), filepath.Join(dir, "log")
	if err := os.WriteFile(logs, []byte("line1\nlast line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(s string) {
		if err := os.WriteFile(term, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("done")
	if got := terminationMessage(term, logs, corev1.TerminationMessageReadFile, 0); got != "done" {
		t.Errorf("the file's message: got %q", got)
	}
	write("")
	if got := terminationMessage(term, logs, corev1.TerminationMessageFallbackToLogsOnError, 1); got != "line1\nlast line" {
		t.Errorf("FallbackToLogsOnError on failure with an empty file takes the log tail: got %q", got)
	}
	if got := terminationMessage(term, logs, corev1.TerminationMessageFallbackToLogsOnError, 0); got != "" {
		t.Errorf("FallbackToLogsOnError on success keeps the empty message: got %q", got)
	}
	big := make([]byte, 5000)
	for i := range big {
		big[i] = 'x'
	}
	write(string(big))
	if got := terminationMessage(term, logs, corev1.TerminationMessageReadFile, 0); len(got) != maxTerminationMessage {
		t.Errorf("a long message is cut to %d bytes: got %d", maxTerminationMessage, len(got))
	}
}
