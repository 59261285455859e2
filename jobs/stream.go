package jobs

import (
	"context"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/stream"
	"github.com/medallion-lake/medallion/table"
)

// Stream runs the streaming query (bronze to silver, quarantine and gold) with the config's
// trigger, or with trigger when its Kind is set (the --trigger flag).
func Stream(ctx context.Context, env Env, trigger config.Trigger, listener stream.Listener) (stream.Report, error) {
	// A `schema:` change that bronze cannot take stops the stream at start too, as ingest:
	// its rules (required columns) follow the config.
	declared, err := DeclaredSchema(env.Config)
	if err != nil {
		return stream.Report{}, err
	}
	bt := table.Open(objstore.WithPrefix(env.Lake, env.Config.Tables.Bronze), table.Options{})
	if err := bronze.CheckDeclared(ctx, bt, env.Config.Tables.Bronze, declared, SchemaPolicy(env.Config)); err != nil {
		return stream.Report{}, err
	}
	q := specs.Query(env.Config)
	listener, flush := env.streamListener(ctx, q.Name, q.Tables.Checkpoint, listener)
	defer flush()
	r, err := stream.New(stream.Options{
		Lake:     env.Lake,
		Query:    q,
		Trigger:  specs.Trigger(trigger),
		Clock:    env.Clock,
		Logger:   env.Logger,
		Listener: listener,
	})
	if err != nil {
		return stream.Report{}, err
	}
	return r.Run(ctx)
}
