// Command dra-oracle answers allocation cases with upstream's structured allocator
// (k8s.io/dynamic-resource-allocation/structured), so that kube-pysched's Python allocator can
// be compared with it case by case.
//
// Input: one JSON case per line on stdin:
//
//	{"node": <v1 Node>, "classes": [<v1 DeviceClass>], "slices": [<v1 ResourceSlice>],
//	 "claims": [<v1 ResourceClaim, allocated in this order>],
//	 "allocatedDevices": ["driver/pool/device", ...],
//	 "features": {"adminAccess": bool, "prioritizedList": bool, "partitionableDevices": bool,
//	              "deviceTaints": bool, "consumableCapacity": bool, "bindingConditions": bool}}
//
// Output: one JSON line per case, in input order:
//
//	{"allocations": [<v1 AllocationResult per claim>]}   satisfiable on this node
//	{"allocations": null, "reason": "..."}               unsatisfiable on this node ("reason" only
//	                                                     when upstream gave one)
//	{"error": "..."}                                     an error (bad input, CEL error, ...)
//
// Upstream's answer can depend on chance: its "stable" allocator (picked when consumable
// capacity and binding conditions are off) collects pools in a Go map, so the order in which
// pools are searched is a random rotation per call. With -runs N each case is allocated N times
// and the answers that differ from the first (share IDs aside) are added to it as
// "alternatives": [<answer>, ...].
//
// Unknown fields in a case are an error: a generator mistake must not pass unnoticed.
// With -version it prints the version of the allocator module it was linked with.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
)

const allocatorModule = "k8s.io/dynamic-resource-allocation"

// caseFeatures are the DRA feature gates a case runs with.
type caseFeatures struct {
	AdminAccess          bool `json:"adminAccess"`
	PrioritizedList      bool `json:"prioritizedList"`
	PartitionableDevices bool `json:"partitionableDevices"`
	DeviceTaints         bool `json:"deviceTaints"`
	ConsumableCapacity   bool `json:"consumableCapacity"`
	BindingConditions    bool `json:"bindingConditions"`
}

type allocationCase struct {
	Node             *v1.Node                    `json:"node"`
	Classes          []resourceapi.DeviceClass   `json:"classes"`
	Slices           []resourceapi.ResourceSlice `json:"slices"`
	Claims           []resourceapi.ResourceClaim `json:"claims"`
	AllocatedDevices []string                    `json:"allocatedDevices"`
	Features         *caseFeatures               `json:"features"`
}

type result struct {
	Allocations  []resourceapi.AllocationResult
	Reason       string
	Error        string
	Alternatives []result
}

// MarshalJSON writes exactly one of the three answer shapes (plus any alternatives).
func (r result) MarshalJSON() ([]byte, error) {
	out := map[string]any{"allocations": r.Allocations}
	switch {
	case r.Error != "":
		out = map[string]any{"error": r.Error}
	case r.Allocations == nil && r.Reason != "":
		out["reason"] = r.Reason
	}
	if len(r.Alternatives) > 0 {
		out["alternatives"] = r.Alternatives
	}
	return json.Marshal(out)
}

// key identifies an answer up to the values of generated share IDs (random UUIDs).
func (r result) key() string {
	if r.Error != "" || r.Allocations == nil {
		return fmt.Sprintf("%q %q", r.Error, r.Reason)
	}
	shares := map[types.UID]types.UID{}
	allocations := make([]resourceapi.AllocationResult, len(r.Allocations))
	for i := range r.Allocations {
		r.Allocations[i].DeepCopyInto(&allocations[i])
		for j := range allocations[i].Devices.Results {
			if id := allocations[i].Devices.Results[j].ShareID; id != nil {
				if _, ok := shares[*id]; !ok {
					shares[*id] = types.UID(fmt.Sprintf("share-%d", len(shares)))
				}
				canonical := shares[*id]
				allocations[i].Devices.Results[j].ShareID = &canonical
			}
		}
	}
	data, err := json.Marshal(allocations)
	if err != nil {
		return err.Error()
	}
	return string(data)
}

// classLister serves the case's DeviceClasses as the scheduler's informer-backed lister does
// (List in the case's order).
type classLister []*resourceapi.DeviceClass

func (l classLister) List() ([]*resourceapi.DeviceClass, error) {
	return l, nil
}

func (l classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	for _, class := range l {
		if class.Name == name {
			return class, nil
		}
	}
	return nil, apierrors.NewNotFound(resourceapi.Resource("deviceclasses"), name)
}

// features maps the case's gates onto the allocator's, as kube-scheduler's AllocatorFeatures
// does. FractionalCapacityRange is a refinement of consumable capacity: on with it, as both
// are by default in v1.37. BindingConditions stands for DRADeviceBindingConditions together
// with DRAResourceClaimDeviceStatus (GA, locked on).
func (f caseFeatures) allocator() structured.Features {
	return structured.Features{
		AdminAccess:             f.AdminAccess,
		PrioritizedList:         f.PrioritizedList,
		PartitionableDevices:    f.PartitionableDevices,
		DeviceTaints:            f.DeviceTaints,
		ConsumableCapacity:      f.ConsumableCapacity,
		FractionalCapacityRange: f.ConsumableCapacity,
		DeviceBindingAndStatus:  f.BindingConditions,
	}
}

func parseDeviceID(id string) (structured.DeviceID, error) {
	// Driver names and device names have no slash; pool names may have several.
	first, last := strings.Index(id, "/"), strings.LastIndex(id, "/")
	if first <= 0 || last == first || last == len(id)-1 {
		return structured.DeviceID{}, fmt.Errorf("allocatedDevices: %q is not driver/pool/device", id)
	}
	return structured.MakeDeviceID(id[:first], id[first+1:last], id[last+1:]), nil
}

func decodeCase(line []byte) (*allocationCase, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var c allocationCase
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("decode case: %w", err)
	}
	if c.Node == nil {
		return nil, errors.New("decode case: node is required")
	}
	if c.Features == nil {
		return nil, errors.New("decode case: features is required")
	}
	return &c, nil
}

// answer allocates one case `runs` times, each within `timeout`, and keeps the distinct answers.
func answer(line []byte, runs int, timeout time.Duration) result {
	c, err := decodeCase(line)
	if err != nil {
		return result{Error: err.Error()}
	}
	var first result
	seen := sets.New[string]()
	for run := 0; run < runs; run++ {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		res := allocate(ctx, c)
		cancel()
		if key := res.key(); !seen.Has(key) {
			seen.Insert(key)
			if run == 0 {
				first = res
			} else {
				first.Alternatives = append(first.Alternatives, res)
			}
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			break // a search this long is not repeated
		}
	}
	return first
}

// allocate runs one case once; a panic in the allocator becomes an error answer.
func allocate(ctx context.Context, c *allocationCase) (res result) {
	defer func() {
		if p := recover(); p != nil {
			res = result{Error: fmt.Sprintf("allocator panicked: %v", p)}
		}
	}()
	classes := make(classLister, len(c.Classes))
	for i := range c.Classes {
		classes[i] = &c.Classes[i]
	}
	slices := make([]*resourceapi.ResourceSlice, len(c.Slices))
	for i := range c.Slices {
		slices[i] = &c.Slices[i]
	}
	claims := make([]*resourceapi.ResourceClaim, len(c.Claims))
	for i := range c.Claims {
		claims[i] = &c.Claims[i]
	}
	state := structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
	for _, id := range c.AllocatedDevices {
		deviceID, err := parseDeviceID(id)
		if err != nil {
			return result{Error: err.Error()}
		}
		state.AllocatedDevices.Insert(deviceID)
	}
	// A fresh cache per case, sized as kube-scheduler's: no case sees another's compilations.
	celCache := cel.NewCache(10, cel.Features{EnableConsumableCapacity: c.Features.ConsumableCapacity})
	allocator, err := structured.NewAllocator(ctx, c.Features.allocator(), state, classes, slices, celCache)
	if err != nil {
		return result{Error: err.Error()}
	}
	allocations, err := allocator.Allocate(ctx, c.Node, claims)
	switch {
	case errors.Is(err, structured.ErrFailedAllocationOnNode):
		// Upstream's "only this node" failure: the scheduler reports it as unschedulable.
		return result{Reason: err.Error()}
	case err != nil:
		return result{Error: err.Error()}
	case allocations == nil:
		return result{}
	}
	return result{Allocations: allocations}
}

func linkedVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, dep := range info.Deps {
		if dep.Path == allocatorModule {
			if dep.Replace != nil {
				return dep.Replace.Version
			}
			return dep.Version
		}
	}
	return "unknown"
}

func main() {
	version := flag.Bool("version", false, "print the linked "+allocatorModule+" version and exit")
	timeout := flag.Duration("timeout", 10*time.Second,
		"budget per allocation (kube-scheduler's default filterTimeout); exceeding it is an error answer")
	runs := flag.Int("runs", 1, "allocate each case this many times and report the distinct answers")
	flag.Parse()
	if *version {
		fmt.Printf("%s %s\n", allocatorModule, linkedVersion())
		return
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	for {
		line, err := in.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if encErr := enc.Encode(answer(line, max(*runs, 1), *timeout)); encErr != nil {
				fmt.Fprintf(os.Stderr, "dra-oracle: encode answer: %v\n", encErr)
				os.Exit(1)
			}
			// One answer per case as soon as it is known: callers may stream cases.
			if flushErr := out.Flush(); flushErr != nil {
				os.Exit(1)
			}
		}
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "dra-oracle: read stdin: %v\n", err)
			os.Exit(1)
		}
	}
}
