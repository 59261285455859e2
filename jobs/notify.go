package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/medallion-lake/medallion/bronze/watch"
	"github.com/medallion-lake/medallion/objstore/bucketurl"
)

// maxEventBody bounds one notification request.
const maxEventBody = 4 << 20

// notifier is event-driven ingestion: the webhook handler queues the landing keys that S3 event
// notifications name, and a loop ingests them (exactly once, under the ingest lease) within
// about a second. Events are hints: the scheduled ingest run lists the prefix and catches any
// object whose event was lost.
type notifier struct {
	env     Env
	leases  *Leases
	lake    bucketurl.Location
	mu      sync.Mutex
	pending map[string]bool
	wake    chan struct{}
	events  *prometheus.CounterVec
	// record counts each ingest as a run of the ingest job (set by the Server).
	record func(start time.Time, summary any, err error)
}

func newNotifier(env Env, leases *Leases, reg prometheus.Registerer) (*notifier, error) {
	loc, err := bucketurl.Parse(env.Config.Lake)
	if err != nil {
		return nil, err
	}
	n := &notifier{
		env: env, leases: leases, lake: loc, pending: map[string]bool{}, wake: make(chan struct{}, 1),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "medallion_notifications_total",
			Help: "S3 event notifications received, by outcome (queued, ignored, bad).",
		}, []string{"outcome"}),
	}
	if err := reg.Register(n.events); err != nil {
		return nil, err
	}
	return n, nil
}

// lakeKey maps an event's bucket and key to a key of the lake bucket, or "" when the object is
// outside the lake.
func (n *notifier) lakeKey(o watch.Object) string {
	if n.lake.Scheme != "s3" || o.Bucket != n.lake.Bucket {
		if n.lake.Scheme == "s3" {
			return ""
		}
		return o.Key // a file lake has no bucket: take keys as lake-relative
	}
	if n.lake.Prefix == "" {
		return o.Key
	}
	rest, ok := strings.CutPrefix(o.Key, n.lake.Prefix+"/")
	if !ok {
		return ""
	}
	return rest
}

// ServeHTTP accepts one notification (POST, S3 event JSON).
func (n *notifier) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxEventBody))
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	objs, err := watch.ParseEvent(body)
	if err != nil {
		n.events.WithLabelValues("bad").Inc()
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	landing := n.env.Config.Landing.Path
	queued := 0
	n.mu.Lock()
	for _, o := range objs {
		key := n.lakeKey(o)
		if key == "" || !strings.HasPrefix(key, landing) {
			n.events.WithLabelValues("ignored").Inc()
			continue
		}
		n.pending[key] = true
		queued++
		n.events.WithLabelValues("queued").Inc()
	}
	n.mu.Unlock()
	if queued > 0 {
		select {
		case n.wake <- struct{}{}:
		default:
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// run ingests queued keys until ctx ends. Keys arriving together are ingested in one batch.
func (n *notifier) run(ctx context.Context) {
	log := n.env.Logger.With("component", "notifications")
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.wake:
		}
		// Gather what arrives in the next moment into the same batch.
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
		n.mu.Lock()
		keys := make([]string, 0, len(n.pending))
		for k := range n.pending {
			keys = append(keys, k)
		}
		n.pending = map[string]bool{}
		n.mu.Unlock()
		if len(keys) == 0 {
			continue
		}
		if err := n.ingest(ctx, keys); err != nil {
			log.Warn("event-driven ingest failed; the next listing will catch these objects", "keys", len(keys), "err", err)
		}
	}
}

// ingest runs IngestKeys under the ingest lease, waiting a little while the scheduled ingest
// (here or in another process) holds it.
func (n *notifier) ingest(ctx context.Context, keys []string) error {
	var lease *Lease
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		lease, err = n.leases.Acquire(ctx, "ingest")
		if !errors.Is(err, ErrLeaseHeld) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	if err != nil {
		return err
	}
	defer lease.Release(context.WithoutCancel(ctx))
	start := time.Now()
	rep, err := IngestKeys(lease.Context(), n.env, keys)
	if n.record != nil {
		n.record(start, rep, err) // an ingest run like a scheduled one, in status and metrics
	}
	if err == nil {
		n.env.Logger.Info("ingested from notifications", "keys", len(keys), "files", rep.Files, "rows", rep.Rows)
	}
	return err
}

// subscribeLake attaches the webhook target to the lake's bucket for the landing prefix (MinIO).
func subscribeLake(ctx context.Context, env Env) error {
	loc, err := bucketurl.Parse(env.Config.Lake)
	if err != nil {
		return err
	}
	if loc.Scheme != "s3" {
		return fmt.Errorf("jobs: landing.notify.mode webhook needs an s3:// lake, not %s", env.Config.Lake)
	}
	prefix := env.Config.Landing.Path
	if loc.Prefix != "" {
		prefix = loc.Prefix + "/" + prefix
	}
	s3 := env.Config.S3
	return watch.Subscribe(ctx, watch.MinIO{
		Endpoint: s3.Endpoint, AccessKeyID: s3.Credentials.AccessKeyID,
		SecretAccessKey: s3.Credentials.SecretAccessKey, SessionToken: s3.Credentials.SessionToken,
	}, loc.Bucket, prefix, env.Config.Landing.Notify.ARN)
}
