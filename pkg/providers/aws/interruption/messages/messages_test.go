package messages

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

const (
	id1 = "i-0123456789abcdef0"
	id2 = "i-0fedcba9876543210"
)

func event(source, detailType, detail string) string {
	return fmt.Sprintf(`{"version":"0","id":"e-1","detail-type":%q,"source":%q,"account":"111122223333","time":"2026-11-30T04:00:00Z","region":"us-east-1","resources":[],"detail":%s}`,
		detailType, source, detail)
}

func TestParse(t *testing.T) {
	at := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	tests := []struct {
		name           string
		body           string
		wantKind       Kind
		wantState      string
		wantIDs        []string
		wantDisruptive bool
	}{
		{
			name:     "spot interruption",
			body:     event(SourceEC2, DetailTypeSpotInterruption, `{"instance-id":"`+id1+`","instance-action":"terminate"}`),
			wantKind: KindSpotInterruption, wantIDs: []string{id1}, wantDisruptive: true,
		},
		{
			name:     "rebalance recommendation",
			body:     event(SourceEC2, DetailTypeRebalance, `{"instance-id":"`+id1+`"}`),
			wantKind: KindRebalanceRecommendation, wantIDs: []string{id1},
		},
		{
			name:     "state change to stopping",
			body:     event(SourceEC2, DetailTypeStateChange, `{"instance-id":"`+id1+`","state":"stopping"}`),
			wantKind: KindStateChange, wantState: StateStopping, wantIDs: []string{id1}, wantDisruptive: true,
		},
		{
			name:     "state change to stopped",
			body:     event(SourceEC2, DetailTypeStateChange, `{"instance-id":"`+id1+`","state":"stopped"}`),
			wantKind: KindStateChange, wantState: StateStopped, wantIDs: []string{id1}, wantDisruptive: true,
		},
		{
			name:     "state change to shutting-down",
			body:     event(SourceEC2, DetailTypeStateChange, `{"instance-id":"`+id1+`","state":"shutting-down"}`),
			wantKind: KindStateChange, wantState: StateShuttingDown, wantIDs: []string{id1}, wantDisruptive: true,
		},
		{
			name:     "state change to terminated",
			body:     event(SourceEC2, DetailTypeStateChange, `{"instance-id":"`+id1+`","state":"terminated"}`),
			wantKind: KindStateChange, wantState: StateTerminated, wantIDs: []string{id1}, wantDisruptive: true,
		},
		{
			name:     "state change to running is not disruptive",
			body:     event(SourceEC2, DetailTypeStateChange, `{"instance-id":"`+id1+`","state":"running"}`),
			wantKind: KindStateChange, wantState: "running", wantIDs: []string{id1},
		},
		{
			name: "scheduled change",
			body: event(SourceHealth, DetailTypeHealthEvent, `{"service":"EC2","eventTypeCode":"AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED","eventTypeCategory":"scheduledChange",
				"affectedEntities":[{"entityValue":"`+id2+`"},{"entityValue":"`+id1+`"},{"entityValue":"`+id2+`"},{"entityValue":"vol-1"}]}`),
			wantKind: KindScheduledChange, wantIDs: []string{id1, id2}, wantDisruptive: true,
		},
		{
			name:     "health event of another category",
			body:     event(SourceHealth, DetailTypeHealthEvent, `{"service":"EC2","eventTypeCategory":"issue","affectedEntities":[]}`),
			wantKind: KindUnknown,
		},
		{
			name:     "another event",
			body:     event("aws.s3", "Object Created", `{}`),
			wantKind: KindUnknown,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse([]byte(tc.body))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if m.Kind != tc.wantKind || m.State != tc.wantState || !reflect.DeepEqual(m.InstanceIDs, tc.wantIDs) {
				t.Errorf("got kind %q state %q ids %v, want %q %q %v", m.Kind, m.State, m.InstanceIDs, tc.wantKind, tc.wantState, tc.wantIDs)
			}
			if m.Disruptive() != tc.wantDisruptive {
				t.Errorf("Disruptive() = %v, want %v", m.Disruptive(), tc.wantDisruptive)
			}
			if !m.Time.Equal(at) || m.ID != "e-1" {
				t.Errorf("time %v id %q, want %v e-1", m.Time, m.ID, at)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, body, wantField string
	}{
		{name: "not JSON", body: "hello"},
		{name: "no detail-type", body: `{"source":"aws.ec2"}`},
		{name: "bad time", body: `{"source":"aws.ec2","detail-type":"x","time":"yesterday"}`, wantField: "time"},
		{name: "spot without detail", body: `{"source":"aws.ec2","detail-type":"` + DetailTypeSpotInterruption + `"}`, wantField: "detail"},
		{name: "spot with a bad id", body: event(SourceEC2, DetailTypeSpotInterruption, `{"instance-id":"i-xyz"}`), wantField: "detail.instance-id"},
		{name: "state change without state", body: event(SourceEC2, DetailTypeStateChange, `{"instance-id":"`+id1+`"}`), wantField: "detail.state"},
		{name: "scheduled change without instances", body: event(SourceHealth, DetailTypeHealthEvent, `{"service":"EC2","eventTypeCategory":"scheduledChange","affectedEntities":[{"entityValue":"vol-1"}]}`), wantField: "detail.affectedEntities"},
		{name: "too large", body: `{"source":"` + strings.Repeat("a", MaxBodyBytes) + `"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.body))
			var me *Error
			if !errors.As(err, &me) || !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse error = %v, want *Error", err)
			}
			if me.Field != tc.wantField {
				t.Errorf("Field = %q, want %q (%v)", me.Field, tc.wantField, err)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(event(SourceEC2, DetailTypeSpotInterruption, `{"instance-id":"`+id1+`"}`)))
	f.Add([]byte(event(SourceEC2, DetailTypeStateChange, `{"instance-id":"`+id1+`","state":"stopped"}`)))
	f.Add([]byte(event(SourceHealth, DetailTypeHealthEvent, `{"service":"EC2","eventTypeCategory":"scheduledChange","affectedEntities":[{"entityValue":"`+id1+`"}]}`)))
	f.Add([]byte(`{"source":1}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := Parse(body)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		for i, id := range m.InstanceIDs {
			if !validInstanceID(id) || (i > 0 && m.InstanceIDs[i-1] >= id) {
				t.Fatalf("instance ids %v not valid, sorted and distinct", m.InstanceIDs)
			}
		}
		if m.Kind != KindUnknown && m.Kind != KindStateChange && m.State != "" {
			t.Fatalf("state %q on a %s message", m.State, m.Kind)
		}
	})
}

func TestCheckOrigin(t *testing.T) {
	ours := event(SourceEC2, DetailTypeSpotInterruption, `{"instance-id":"`+id1+`"}`)
	other := func(from, to string) string { return strings.Replace(ours, from, to, 1) }
	for _, tc := range []struct {
		name, body      string
		account, region string
		field, got      string
	}{
		{name: "ours", body: ours, account: "111122223333", region: "us-east-1"},
		{name: "another account", body: other(`"account":"111122223333"`, `"account":"444455556666"`), account: "111122223333", region: "us-east-1", field: "account", got: "444455556666"},
		{name: "another region", body: other(`"region":"us-east-1"`, `"region":"eu-west-1"`), account: "111122223333", region: "us-east-1", field: "region", got: "eu-west-1"},
		{name: "no account", body: other(`"account":"111122223333",`, ``), account: "111122223333", region: "us-east-1", field: "account"},
		{name: "no region", body: other(`"region":"us-east-1",`, ``), account: "111122223333", region: "us-east-1", field: "region"},
		{name: "unknown kinds too", body: strings.Replace(event("aws.s3", "Object Created", `{}`), "us-east-1", "ap-south-1", 1), account: "111122223333", region: "us-east-1", field: "region", got: "ap-south-1"},
		{name: "region not configured", body: other(`"region":"us-east-1"`, `"region":"eu-west-1"`), account: "111122223333"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			err = m.CheckOrigin(tc.account, tc.region)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("CheckOrigin = %v, want nil", err)
				}
				return
			}
			var fe *ForeignError
			if !errors.As(err, &fe) || !errors.Is(err, ErrForeign) {
				t.Fatalf("CheckOrigin = %v, want a *ForeignError", err)
			}
			if fe.Field != tc.field || fe.Got != tc.got {
				t.Errorf("ForeignError %+v, want field %s got %q", fe, tc.field, tc.got)
			}
			if !strings.Contains(err.Error(), tc.field) || (tc.got != "" && !strings.Contains(err.Error(), tc.got)) {
				t.Errorf("message %q names neither the field nor the value", err)
			}
		})
	}
}
