// Command gofields writes the table that lets leaderworkerset reproduce Go's JSON emission for the
// types stored in an LWS revision (src/leaderworkerset/core/gocompat/data/gofields.json).
//
// Go's encoding/json decides per field whether a value is written (omitempty, omitzero, embedded
// structs flattened into their parent) and how it is written (custom marshalers for Quantity,
// IntOrString, Time, ...). Those facts live in the k8s.io/api Go types; this program reads them with
// reflection so that nobody has to transcribe them by hand.
//
// Usage: hack/gofields/regen.sh (or --check to verify the committed table).
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"runtime/debug"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
)

// The LWS template types of sigs.k8s.io/lws v1.0 (api/leaderworkerset/v1). They are restated here
// because the v1.0 module is not served by the module proxy; only the field names, Go types and JSON
// tags matter. checkMirror verifies them against the newest served module (v0.9.0): every upstream
// field must appear here, in the same order, with the same tag and kind; v1.0 additions come last.
type LeaderWorkerTemplate struct {
	LeaderTemplate                       *corev1.PodTemplateSpec                                 `json:"leaderTemplate,omitempty"`
	WorkerTemplate                       corev1.PodTemplateSpec                                  `json:"workerTemplate"`
	Size                                 *int32                                                  `json:"size,omitempty"`
	RestartPolicy                        string                                                  `json:"restartPolicy,omitempty"`
	SubGroupPolicy                       *SubGroupPolicy                                         `json:"subGroupPolicy,omitempty"`
	VolumeClaimTemplates                 []corev1.PersistentVolumeClaim                          `json:"volumeClaimTemplates,omitempty"`
	PersistentVolumeClaimRetentionPolicy *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`
	MaxGroupRestarts                     *int32                                                  `json:"maxGroupRestarts,omitempty"`
}

type SubGroupPolicy struct {
	Type         *string `json:"subGroupPolicyType,omitempty"`
	SubGroupSize *int32  `json:"subGroupSize,omitempty"`
}

type NetworkConfig struct {
	SubdomainPolicy *string `json:"subdomainPolicy"`
}

// Types whose JSON form comes from their own MarshalJSON/UnmarshalJSON. Each gets a kind that the
// Python side implements explicitly; any other marshaler found while walking is an error, so a new
// one in a future k8s.io/api cannot slip through unnoticed.
var customKinds = map[reflect.Type]string{
	reflect.TypeOf(resource.Quantity{}):  "quantity",
	reflect.TypeOf(intstr.IntOrString{}): "intorstring",
	reflect.TypeOf(metav1.Time{}):        "time",
	reflect.TypeOf(metav1.MicroTime{}):   "microtime",
	reflect.TypeOf(metav1.FieldsV1{}):    "rawjson",
	reflect.TypeOf(metav1.Duration{}):    "duration",
}

var (
	marshalerType   = reflect.TypeOf((*json.Marshaler)(nil)).Elem()
	unmarshalerType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
	textMarshaler   = reflect.TypeOf((*interface{ MarshalText() ([]byte, error) })(nil)).Elem()
	isZeroerType    = reflect.TypeOf((*interface{ IsZero() bool })(nil)).Elem()
)

// TypeRef describes a Go type the way the Python walker needs it.
type TypeRef struct {
	Kind string   `json:"kind"`
	Name string   `json:"name,omitempty"` // struct types: key into Table.Structs
	Elem *TypeRef `json:"elem,omitempty"` // ptr, slice, map (value type)
	Bits int      `json:"bits,omitempty"` // int, uint: the range a JSON number must fit
}

type Field struct {
	JSON      string  `json:"json"`
	Go        string  `json:"go"`
	Type      TypeRef `json:"type"`
	OmitEmpty bool    `json:"omitempty,omitempty"`
	OmitZero  bool    `json:"omitzero,omitempty"`
}

type Struct struct {
	Fields []Field `json:"fields"`
}

type Table struct {
	Comment string            `json:"comment"`
	Modules map[string]string `json:"modules"`
	Roots   map[string]string `json:"roots"`
	Structs map[string]Struct `json:"structs"`
}

type walker struct {
	structs map[string]Struct
}

// lwsPackage names the restated LWS types after the upstream package they mirror.
const lwsPackage = "sigs.k8s.io/lws/api/leaderworkerset/v1"

func typeName(t reflect.Type) string {
	if t.PkgPath() == "main" {
		return lwsPackage + "." + t.Name()
	}
	return t.PkgPath() + "." + t.Name()
}

func (w *walker) ref(t reflect.Type) TypeRef {
	if kind, ok := customKinds[t]; ok {
		return TypeRef{Kind: kind}
	}
	w.rejectUnknownMarshaler(t)
	switch t.Kind() {
	case reflect.String:
		return TypeRef{Kind: "string"}
	case reflect.Bool:
		return TypeRef{Kind: "bool"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return TypeRef{Kind: "int", Bits: t.Bits()}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return TypeRef{Kind: "uint", Bits: t.Bits()}
	case reflect.Float32, reflect.Float64:
		return TypeRef{Kind: "float", Bits: t.Bits()}
	case reflect.Pointer:
		elem := w.ref(t.Elem())
		return TypeRef{Kind: "ptr", Elem: &elem}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return TypeRef{Kind: "bytes"}
		}
		elem := w.ref(t.Elem())
		return TypeRef{Kind: "slice", Elem: &elem}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			panic(fmt.Sprintf("map with non-string key: %v", t))
		}
		elem := w.ref(t.Elem())
		return TypeRef{Kind: "map", Elem: &elem}
	case reflect.Struct:
		name := typeName(t)
		if _, seen := w.structs[name]; !seen {
			w.structs[name] = Struct{} // reserve first: the types are recursive (JSONSchemaProps-like)
			w.structs[name] = Struct{Fields: w.fields(t)}
		}
		return TypeRef{Kind: "struct", Name: name}
	default:
		panic(fmt.Sprintf("unsupported kind %v for %v", t.Kind(), t))
	}
}

func (w *walker) rejectUnknownMarshaler(t reflect.Type) {
	for _, iface := range []reflect.Type{marshalerType, unmarshalerType, textMarshaler} {
		if t.Implements(iface) || reflect.PointerTo(t).Implements(iface) {
			if t.Kind() == reflect.Pointer {
				continue // the pointee is checked when it is walked
			}
			panic(fmt.Sprintf("type %v implements %v but has no custom kind", t, iface))
		}
	}
	if t.Kind() == reflect.Struct && (t.Implements(isZeroerType) || reflect.PointerTo(t).Implements(isZeroerType)) {
		panic(fmt.Sprintf("struct %v has an IsZero method but no custom kind", t))
	}
}

// fields lists the JSON fields of a struct in declaration order, with embedded structs that carry
// no JSON name flattened into their parent as encoding/json does.
func (w *walker) fields(t reflect.Type) []Field {
	var out []Field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" {
			if sf.Type.Kind() != reflect.Struct {
				panic(fmt.Sprintf("embedded non-struct %v in %v", sf.Type, t))
			}
			out = append(out, w.fields(sf.Type)...)
			continue
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if strings.Contains(","+opts+",", ",string,") {
			panic(fmt.Sprintf("field %v.%s uses the ,string option", t, sf.Name))
		}
		out = append(out, Field{
			JSON:      name,
			Go:        sf.Name,
			Type:      w.ref(sf.Type),
			OmitEmpty: strings.Contains(","+opts+",", ",omitempty,"),
			OmitZero:  strings.Contains(","+opts+",", ",omitzero,"),
		})
	}
	checkNoDuplicates(t, out)
	return out
}

// checkNoDuplicates guards the flattening above: encoding/json resolves clashing names with its
// dominance rules, which this generator does not implement, so a clash must stop the build.
func checkNoDuplicates(t reflect.Type, fields []Field) {
	seen := map[string]bool{}
	for _, f := range fields {
		if seen[f.JSON] {
			panic(fmt.Sprintf("duplicate JSON name %q in %v", f.JSON, t))
		}
		seen[f.JSON] = true
	}
}

func moduleVersions() map[string]string {
	versions := map[string]string{}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "k8s.io/api" || dep.Path == "k8s.io/apimachinery" {
				versions[dep.Path] = dep.Version
			}
		}
	}
	return versions
}

// checkMirror fails the generation when a restated LWS type drifts from the upstream module's.
func checkMirror(mirror, upstream reflect.Type) {
	if mirror.NumField() < upstream.NumField() {
		panic(fmt.Sprintf("%v: mirror has fewer fields than upstream", mirror))
	}
	for i := 0; i < upstream.NumField(); i++ {
		want, got := upstream.Field(i), mirror.Field(i)
		if want.Name != got.Name || want.Tag.Get("json") != got.Tag.Get("json") || !sameShape(want.Type, got.Type) {
			panic(fmt.Sprintf("%v field %d: upstream %s %v `%s`, mirror %s %v `%s`", mirror, i,
				want.Name, want.Type, want.Tag.Get("json"), got.Name, got.Type, got.Tag.Get("json")))
		}
	}
}

// sameShape compares types as JSON sees them: identical k8s types, the same kind for the LWS
// package's named scalar types (mirrored by plain strings), same-named restated structs.
func sameShape(a, b reflect.Type) bool {
	if a == b {
		return true
	}
	if a.Kind() != b.Kind() {
		return false
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Slice:
		return sameShape(a.Elem(), b.Elem())
	case reflect.Struct:
		return a.Name() == b.Name()
	default:
		return true // same scalar kind
	}
}

func main() {
	checkMirror(reflect.TypeOf(LeaderWorkerTemplate{}), reflect.TypeOf(lwsv1.LeaderWorkerTemplate{}))
	checkMirror(reflect.TypeOf(SubGroupPolicy{}), reflect.TypeOf(lwsv1.SubGroupPolicy{}))
	checkMirror(reflect.TypeOf(NetworkConfig{}), reflect.TypeOf(lwsv1.NetworkConfig{}))
	w := &walker{structs: map[string]Struct{}}
	roots := map[string]string{
		"LeaderWorkerTemplate":  w.ref(reflect.TypeOf(LeaderWorkerTemplate{})).Name,
		"NetworkConfig":         w.ref(reflect.TypeOf(NetworkConfig{})).Name,
		"PodTemplateSpec":       w.ref(reflect.TypeOf(corev1.PodTemplateSpec{})).Name,
		"PersistentVolumeClaim": w.ref(reflect.TypeOf(corev1.PersistentVolumeClaim{})).Name,
	}
	table := Table{
		Comment: "Generated by hack/gofields (go run . > this file); do not edit.",
		Modules: moduleVersions(),
		Roots:   roots,
		Structs: w.structs,
	}
	out, err := json.MarshalIndent(table, "", " ")
	if err != nil {
		panic(err)
	}
	os.Stdout.Write(append(out, '\n'))
}
