package instancetype

import "testing"

func TestSplitFamily(t *testing.T) {
	tests := []struct {
		family, category string
		generation       int
	}{
		{"m5", "m", 5}, {"c7i-flex", "c", 7}, {"u7i-12tb", "u", 7}, {"inf2", "inf", 2}, {"trn1n", "trn", 1},
		{"hpc7g", "hpc", 7}, {"x2iezn", "x", 2}, {"is4gen", "is", 4}, {"a1", "a", 1}, {"u-6tb1", "u", 1},
	}
	for _, tc := range tests {
		t.Run(tc.family, func(t *testing.T) {
			c, g := splitFamily(tc.family)
			if c != tc.category || g != tc.generation {
				t.Errorf("splitFamily(%q) = %q, %d; want %q, %d", tc.family, c, g, tc.category, tc.generation)
			}
		})
	}
}

func TestParsePriceListEntry(t *testing.T) {
	tests := []struct {
		name, doc, wantType string
		wantPrice           float64
		wantErr             bool
	}{
		{name: "on-demand price", doc: `{"product":{"attributes":{"instanceType":"m5.large"}},"terms":{"OnDemand":{"A.B":{"priceDimensions":{"A.B.C":{"pricePerUnit":{"USD":"0.0960000000"}}}}}}}`, wantType: "m5.large", wantPrice: 0.096},
		{name: "no instance type", doc: `{"product":{"attributes":{}},"terms":{}}`},
		{name: "zero price skipped", doc: `{"product":{"attributes":{"instanceType":"m5.large"}},"terms":{"OnDemand":{"A":{"priceDimensions":{"B":{"pricePerUnit":{"USD":"0"}}}}}}}`},
		{name: "bad price", doc: `{"product":{"attributes":{"instanceType":"m5.large"}},"terms":{"OnDemand":{"A":{"priceDimensions":{"B":{"pricePerUnit":{"USD":"cheap"}}}}}}}`, wantErr: true},
		{name: "not JSON", doc: `<xml/>`, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			typ, price, err := ParsePriceListEntry(tc.doc)
			if (err != nil) != tc.wantErr || typ != tc.wantType || price != tc.wantPrice {
				t.Errorf("= %q, %v, %v; want %q, %v, err=%v", typ, price, err, tc.wantType, tc.wantPrice, tc.wantErr)
			}
		})
	}
}
