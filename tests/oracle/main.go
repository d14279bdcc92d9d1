// Command oracle turns test inputs into golden vectors by running them through upstream's own code:
// the revision functions of the sigs.k8s.io/lws Go module, apimachinery's resource.Quantity and Go's
// encoding/json. It is a test-time tool only; see regen.sh.
//
// Input (stdin) and output (stdout) are one JSON document:
//
//	{"revisions": [...], "dsRevisions": [...], "semantic": [...], "quantities": [...], "gojson": [...]}
//
// Each input row is echoed back with the oracle's answers added next to it.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	sigsjson "sigs.k8s.io/json"
	disaggregatedsetv1 "sigs.k8s.io/lws/api/disaggregatedset/v1"
	leaderworkerset "sigs.k8s.io/lws/api/leaderworkerset/v1"
	dsutils "sigs.k8s.io/lws/pkg/utils/disaggregatedset"
	"sigs.k8s.io/lws/pkg/utils/revision"
)

type revisionCase struct {
	ID          string            `json:"id"`
	LWS         json.RawMessage   `json:"lws"`
	RevisionKey string            `json:"revisionKey"`
	Existing    []json.RawMessage `json:"existing,omitempty"`
	Want        map[string]any    `json:"want,omitempty"`
}

type semanticCase struct {
	ID     string          `json:"id"`
	LWS    json.RawMessage `json:"lws"`
	Stored string          `json:"stored"`
	Want   map[string]any  `json:"want,omitempty"`
}

type quantityCase struct {
	Input string         `json:"input"`
	Want  map[string]any `json:"want,omitempty"`
}

type gojsonCase struct {
	Input string         `json:"input"`
	Want  map[string]any `json:"want,omitempty"`
}

type dsCase struct {
	ID    string          `json:"id"`
	Roles json.RawMessage `json:"roles"`
	Want  map[string]any  `json:"want,omitempty"`
}

type document struct {
	Oracle      map[string]string `json:"oracle,omitempty"`
	Revisions   []revisionCase    `json:"revisions"`
	DSRevisions []dsCase          `json:"dsRevisions"`
	Semantic    []semanticCase    `json:"semantic"`
	Quantities  []quantityCase    `json:"quantities"`
	GoJSON      []gojsonCase      `json:"gojson"`
}

// decodeLWS decodes the way the Kubernetes JSON serializer (and hence the controller's cache) does.
func decodeLWS(raw []byte) (*leaderworkerset.LeaderWorkerSet, error) {
	lws := &leaderworkerset.LeaderWorkerSet{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, lws); err != nil {
		return nil, err
	}
	return lws, nil
}

func newClient(existing []json.RawMessage) (client.Client, error) {
	scheme := runtime.NewScheme()
	if err := appsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	builder := fake.NewClientBuilder().WithScheme(scheme)
	for _, raw := range existing {
		cr := &appsv1.ControllerRevision{}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, cr); err != nil {
			return nil, err
		}
		builder = builder.WithObjects(cr)
	}
	return builder.Build(), nil
}

func runRevision(c *revisionCase) error {
	lws, err := decodeLWS(c.LWS)
	if err != nil {
		return err
	}
	k8sClient, err := newClient(c.Existing)
	if err != nil {
		return err
	}
	cr, err := revision.NewRevision(context.Background(), k8sClient, lws, c.RevisionKey)
	if err != nil {
		return err
	}
	// With an empty revisionKey the label is the computed hash, which is also the name's middle part.
	computed, err := revision.NewRevision(context.Background(), k8sClient, lws, "")
	if err != nil {
		return err
	}
	restored, applyErr := restoredPatch(k8sClient, lws, computed)
	c.Want = map[string]any{
		"restoredPatch": restored,
		"applyError":    applyErr,
		"name":          cr.Name,
		"labels":        cr.Labels,
		"revision":      cr.Revision,
		"patch":         string(cr.Data.Raw),
		"hash":          revision.GetRevisionKey(computed),
		"owner":         cr.OwnerReferences,
		"namespace":     cr.Namespace,
	}
	return nil
}

// restoredPatch applies a revision back to its LWS and renders the patch again ("" and the error
// text when upstream cannot apply it).
func restoredPatch(k8sClient client.Client, lws *leaderworkerset.LeaderWorkerSet, cr *appsv1.ControllerRevision) (string, string) {
	restored, err := revision.ApplyRevision(lws, cr)
	if err != nil {
		return "", err.Error()
	}
	again, err := revision.NewRevision(context.Background(), k8sClient, restored, "")
	if err != nil {
		return "", err.Error()
	}
	return string(again.Data.Raw), ""
}

func runSemantic(c *semanticCase) error {
	lws, err := decodeLWS(c.LWS)
	if err != nil {
		return err
	}
	k8sClient, err := newClient(nil)
	if err != nil {
		return err
	}
	proposed, err := revision.NewRevision(context.Background(), k8sClient, lws, "")
	if err != nil {
		return err
	}
	existing := &appsv1.ControllerRevision{}
	existing.ResourceVersion = "1"
	existing.Data = runtime.RawExtension{Raw: []byte(c.Stored)}
	cache := lru.New(10)
	matches := revision.SetMatchesRevision(lws, proposed, existing, cache)
	want := map[string]any{
		"proposedPatch": string(proposed.Data.Raw),
		"bytesEqual":    string(proposed.Data.Raw) == c.Stored,
		"matches":       matches,
	}
	restored, err := revision.ApplyRevision(lws, existing)
	if err != nil {
		want["applyError"] = err.Error()
	} else {
		restoredRevision, err := revision.NewRevision(context.Background(), k8sClient, restored, "")
		if err != nil {
			return err
		}
		want["restoredPatch"] = string(restoredRevision.Data.Raw)
		want["restoredSpec"] = restored.Spec
	}
	c.Want = want
	return nil
}

// runDS computes the DisaggregatedSet revision and, for diagnosis, the bytes it hashes (the same
// struct upstream's ComputeRevision marshals).
func runDS(c *dsCase) error {
	var roles []disaggregatedsetv1.DisaggregatedRoleSpec
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(c.Roles, &roles); err != nil {
		return err
	}
	type roleTemplate struct {
		Name     string                               `json:"name"`
		Template leaderworkerset.LeaderWorkerTemplate `json:"template"`
	}
	templates := make([]roleTemplate, 0, len(roles))
	for _, role := range roles {
		templates = append(templates, roleTemplate{Name: role.Name, Template: role.Spec.LeaderWorkerTemplate})
	}
	hashed, err := json.Marshal(templates)
	if err != nil {
		return err
	}
	c.Want = map[string]any{"revision": dsutils.ComputeRevision(roles), "hashed": string(hashed)}
	return nil
}

func runQuantity(c *quantityCase) {
	var q resource.Quantity
	if err := q.UnmarshalJSON([]byte(c.Input)); err != nil {
		c.Want = map[string]any{"error": true}
		return
	}
	out, err := q.MarshalJSON()
	if err != nil {
		c.Want = map[string]any{"error": true}
		return
	}
	c.Want = map[string]any{"json": string(out)}
}

func runGoJSON(c *gojsonCase) {
	var v any
	if err := json.Unmarshal([]byte(c.Input), &v); err != nil {
		c.Want = map[string]any{"error": true}
		return
	}
	out, err := json.Marshal(v)
	if err != nil {
		c.Want = map[string]any{"error": true}
		return
	}
	c.Want = map[string]any{"json": string(out)}
}

func run() error {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		return err
	}
	var doc document
	if err := json.Unmarshal(in, &doc); err != nil {
		return err
	}
	for i := range doc.Revisions {
		if err := runRevision(&doc.Revisions[i]); err != nil {
			// An object upstream cannot decode is a vector too: we must reject it as well.
			doc.Revisions[i].Want = map[string]any{"error": err.Error()}
		}
	}
	for i := range doc.DSRevisions {
		if err := runDS(&doc.DSRevisions[i]); err != nil {
			doc.DSRevisions[i].Want = map[string]any{"error": err.Error()}
		}
	}
	for i := range doc.Semantic {
		if err := runSemantic(&doc.Semantic[i]); err != nil {
			return fmt.Errorf("semantic case %q: %w", doc.Semantic[i].ID, err)
		}
	}
	for i := range doc.Quantities {
		runQuantity(&doc.Quantities[i])
	}
	for i := range doc.GoJSON {
		runGoJSON(&doc.GoJSON[i])
	}
	doc.Oracle = moduleVersions()
	out, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(append(out, '\n'))
	return err
}

// moduleVersions records which upstream code produced the vectors.
func moduleVersions() map[string]string {
	versions := map[string]string{}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return versions
	}
	versions["go"] = info.GoVersion
	for _, dep := range info.Deps {
		switch dep.Path {
		case "sigs.k8s.io/lws", "k8s.io/api", "k8s.io/apimachinery", "sigs.k8s.io/controller-runtime":
			versions[dep.Path] = dep.Version
		}
	}
	return versions
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
