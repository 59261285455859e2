package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"strings"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/jobs"
	"github.com/medallion-lake/medallion/objstore"
)

// errNoLake reports a config whose lake holds none of the pipeline's tables and nothing in
// its landing prefixes: most often a typo in lake:, where a job would create a new, empty lake
// and report success with nothing done.
var errNoLake = errors.New("no medallion lake there")

// lakeContents is what a lake holds of a pipeline, as far as the refusal and the warnings
// need: which tables exist and which files landing prefixes hold an object.
type lakeContents struct {
	tables, missing []string
	// landing is each files landing prefix (every source's) and whether it holds an object;
	// kafka is true when some source lands from Kafka (nothing in the lake to look at).
	landing []landingPrefix
	kafka   bool
}

type landingPrefix struct {
	source, prefix string
	hasObject      bool
}

// hasAny is true when the lake holds a table of the pipeline or a landing object, or when a
// Kafka source may bring data that is not in the lake.
func (c lakeContents) hasAny() bool {
	if len(c.tables) > 0 || c.kafka {
		return true
	}
	for _, l := range c.landing {
		if l.hasObject {
			return true
		}
	}
	return false
}

// hasKey reports whether anything lies under prefix.
func hasKey(ctx context.Context, lake objstore.Bucket, prefix string) (bool, error) {
	for _, err := range lake.List(ctx, prefix, objstore.ListOptions{}) {
		return err == nil, err
	}
	return false, nil
}

// inspectLake reads, without writing, which of the pipeline's tables exist and which landing
// prefixes hold an object. An error means the store could not be asked (the caller then lets
// the job report it as usual).
func inspectLake(ctx context.Context, lake objstore.Bucket, cfg *config.Pipeline) (lakeContents, error) {
	var c lakeContents
	for _, p := range jobs.TablePaths(jobs.Env{Config: cfg}) {
		ok, err := hasKey(ctx, lake, path.Join(p, "_delta_log")+"/")
		if err != nil {
			return c, err
		}
		if ok {
			c.tables = append(c.tables, p)
		} else {
			c.missing = append(c.missing, p)
		}
	}
	for _, s := range cfg.AllSources() {
		if s.Landing.Kind == config.LandingKafka {
			c.kafka = true
			continue
		}
		ok, err := hasKey(ctx, lake, s.Landing.Path)
		if err != nil {
			return c, err
		}
		c.landing = append(c.landing, landingPrefix{source: s.Name, prefix: s.Landing.Path, hasObject: ok})
	}
	return c, nil
}

// refuseEmptyLake is the check every command but init and demo makes before it opens the lake
// for writing: a lake that holds no table of the pipeline and no landing object is refused
// (exit 2) rather than created, with the path and the way out. A lake that does not exist
// at all (a local directory) is refused the same way. Errors reaching the store are left to
// the job, which reports them as it always has.
func refuseEmptyLake(ctx context.Context, cfg *config.Pipeline, configPath string) error {
	lake, err := jobs.OpenLakeReadOnly(ctx, cfg)
	if errors.Is(err, fs.ErrNotExist) {
		return noLakeError(cfg, configPath, "the directory does not exist")
	}
	if err != nil {
		return nil // the job reports it
	}
	defer lake.Close()
	c, err := inspectLake(ctx, lake, cfg)
	if err != nil || c.hasAny() {
		return nil
	}
	var prefixes []string
	for _, l := range c.landing {
		prefixes = append(prefixes, l.prefix)
	}
	return noLakeError(cfg, configPath, fmt.Sprintf("it holds none of the pipeline's tables (%s) and no object under %s",
		strings.Join(c.missing, ", "), strings.Join(prefixes, ", ")))
}

func noLakeError(cfg *config.Pipeline, configPath, why string) error {
	return &exitError{code: 2, err: fmt.Errorf("%w: lake %s: %s. Is lake: in %s right? To start a new lake there, run: medallion init --config %s",
		errNoLake, cfg.Lake, why, configPath, configPath)}
}

// warnEmptyLanding logs a warning for each files landing prefix that holds no object while its
// source's bronze table holds no data yet: the landing prefix has never had an object, which
// is most often a typo in landing.path (ingest then succeeds with "files":0).
func warnEmptyLanding(ctx context.Context, lake objstore.Bucket, cfg *config.Pipeline, logger *slog.Logger) []string {
	var empty []string
	for _, s := range cfg.AllSources() {
		if s.Landing.Kind == config.LandingKafka {
			continue
		}
		landed, err := hasKey(ctx, lake, s.Landing.Path)
		if err != nil || landed {
			continue
		}
		// Bronze data files lie beside its _delta_log: any key that is not the log means the
		// source has ingested something once.
		if bronzeHasData(ctx, lake, s.Tables.Bronze) {
			continue
		}
		logger.Warn("the landing prefix holds no object and bronze has no rows yet: is landing.path right?",
			"source", s.Name, "lake", cfg.Lake, "landing", s.Landing.Path, "bronze", s.Tables.Bronze)
		empty = append(empty, s.Landing.Path)
	}
	return empty
}

// bronzeHasData reports whether a key other than the transaction log lies under the table
// (a data file: the source has ingested something once). It reads at most two keys: the
// first one, and the first after the log ("_delta_log0" sorts right after "_delta_log/...").
func bronzeHasData(ctx context.Context, lake objstore.Bucket, table string) bool {
	prefix := strings.TrimSuffix(table, "/") + "/"
	log := prefix + "_delta_log/"
	for _, opts := range []objstore.ListOptions{{}, {StartAfter: prefix + "_delta_log0"}} {
		for info, err := range lake.List(ctx, prefix, opts) {
			if err == nil && !strings.HasPrefix(info.Key, log) {
				return true
			}
			break
		}
	}
	return false
}
