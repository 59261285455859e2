package jobs

import (
	"context"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/stream"
)

// Stream runs the streaming query (bronze to silver, quarantine and gold) with the config's
// trigger, or with trigger when its Kind is set (the --trigger flag).
func Stream(ctx context.Context, env Env, trigger config.Trigger, listener stream.Listener) (stream.Report, error) {
	r, err := stream.New(stream.Options{
		Lake:     env.Lake,
		Query:    specs.Query(env.Config),
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
