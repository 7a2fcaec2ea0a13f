package palisade

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// jsonToken is a fencing token in an answer: a decimal string (tokens outgrow JSON
// numbers), or a number from an older node; null is 0.
type jsonToken uint64

func (t *jsonToken) UnmarshalJSON(b []byte) error {
	v, err := tokenOf(b)
	*t = jsonToken(v)
	return err
}

func uintString(u uint64) string { return strconv.FormatUint(u, 10) }

// wireValue is how answers carry key-value bytes. Two forms: `value` + `encoding`
// ("utf8" | "base64"), and `value` (when UTF-8) + `valueBase64` (always, but for
// deletions). `encoding` wins when present; neither value means deleted.
type wireValue struct {
	Value       *string `json:"value"`
	Encoding    *string `json:"encoding"`
	ValueBase64 *string `json:"valueBase64"`
}

// bytes of the value; nil (and no error) when the key was deleted.
func (w wireValue) bytes() ([]byte, error) {
	if w.Encoding != nil {
		if w.Value == nil {
			return nil, nil
		}
		switch *w.Encoding {
		case "utf8":
			return []byte(*w.Value), nil
		case "base64":
			b, err := base64.StdEncoding.DecodeString(*w.Value)
			if err != nil {
				return nil, malformed("value: %v", err)
			}
			return b, nil
		default:
			return nil, malformed("unknown value encoding %q", *w.Encoding)
		}
	}
	if w.ValueBase64 != nil {
		b, err := base64.StdEncoding.DecodeString(*w.ValueBase64)
		if err != nil {
			return nil, malformed("valueBase64: %v", err)
		}
		return b, nil
	}
	if w.Value != nil {
		return []byte(*w.Value), nil
	}
	return nil, nil
}

// wireEntry is a key-value entry of kvGet, a watch snapshot or a kvChanged event.
type wireEntry struct {
	Key      string `json:"key"`
	Revision int64  `json:"revision"`
	wireValue
}

func (w *wireEntry) UnmarshalJSON(b []byte) error {
	var head struct {
		Key      string `json:"key"`
		Revision int64  `json:"revision"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return err
	}
	w.Key, w.Revision = head.Key, head.Revision
	return json.Unmarshal(b, &w.wireValue)
}

// requestValue: UTF-8 text as `value`, other bytes as `valueBase64`.
func requestValue(v []byte, fields map[string]any) {
	if isText(v) {
		fields["value"] = string(v)
	} else {
		fields["valueBase64"] = base64.StdEncoding.EncodeToString(v)
	}
}

func isText(v []byte) bool { return utf8.Valid(v) }
