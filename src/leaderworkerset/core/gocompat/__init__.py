"""Go-compatible encodings and arithmetic, where Python's differ from what upstream computes.

* `gojson` — JSON exactly as Go's `encoding/json` writes it; `gonormalize` — a value as if Go had
  decoded it into its k8s.io/api type and encoded it again (`data/gofields.json`);
* `strategicmerge` — apimachinery's strategic merge patch, as far as revision patches use it;
* `quantity` — resource quantities; `intstr` — IntOrString scaling; `strconv` — Atoi, truncating
  division;
* `fielderrors` — apimachinery's field errors, rendered as admission denials quote them.
"""
