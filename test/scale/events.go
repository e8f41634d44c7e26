package scale

import (
	"context"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// EventCount is how often one kind of event was recorded: Events objects
// created, and Repeats counted in their series.
type EventCount struct {
	Events  int `json:"events"`
	Repeats int `json:"repeats"`
}

// countEvents reads the fleet namespace's events (events.k8s.io/v1) and
// counts them by "Type Reason".
func countEvents(ctx context.Context, cs kubernetes.Interface) (map[string]EventCount, error) {
	out := map[string]EventCount{}
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := cs.EventsV1().Events(Namespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("failed to list the events of %s: %w", Namespace, err)
		}
		for _, e := range list.Items {
			k := e.Type + " " + e.Reason
			c := out[k]
			c.Events++
			if e.Series != nil && e.Series.Count > 1 {
				c.Repeats += int(e.Series.Count) - 1
			}
			out[k] = c
		}
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}

// EventTable is a text table of the events per machine by type and reason,
// most frequent first.
func (r *Result) EventTable() string {
	keys := make([]string, 0, len(r.Events))
	for k := range r.Events {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := r.Events[keys[i]], r.Events[keys[j]]
		if a.Events != b.Events {
			return a.Events > b.Events
		}
		return keys[i] < keys[j]
	})
	n := float64(max(r.N, 1))
	var b strings.Builder
	fmt.Fprintf(&b, "events per machine over the bring-up (N=%d)\n%-44s %9s %9s\n", r.N, "type reason", "events", "repeats")
	var te, tr float64
	for _, k := range keys {
		c := r.Events[k]
		fmt.Fprintf(&b, "%-44s %9.2f %9.2f\n", k, float64(c.Events)/n, float64(c.Repeats)/n)
		te += float64(c.Events) / n
		tr += float64(c.Repeats) / n
	}
	fmt.Fprintf(&b, "%-44s %9.2f %9.2f\n", "total", te, tr)
	return b.String()
}
