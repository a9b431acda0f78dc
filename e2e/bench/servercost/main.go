// Command servercost makes the scheduler's requests with client-go, as kube-scheduler does
// (HTTP/2; protobuf bodies unless -content-type says otherwise), one batch per line of stdin,
// so that e2e/bench/server_cost.py can read kube-apiserver's CPU around each batch.
//
// It reads "<name> <uid>" lines from -pods, prints "ready" once connected, then for each stdin
// line "<kind> <first> <count>" (kind bind, event or get) makes count requests for the pods
// first..first+count-1 and prints "ok <count>"; any failed request ends it with exit status 1.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "")
	podsFile := flag.String("pods", "", "name uid per line")
	ns := flag.String("namespace", "", "")
	node := flag.String("node", "", "")
	contentType := flag.String("content-type", "application/vnd.kubernetes.protobuf", "")
	flag.Parse()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		panic(err)
	}
	cfg.QPS, cfg.Burst = -1, -1
	cfg.ContentType = *contentType
	if *contentType != "application/json" {
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	data, err := os.ReadFile(*podsFile)
	if err != nil {
		panic(err)
	}
	var names, uids []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		names, uids = append(names, f[0]), append(uids, f[1])
	}
	ctx := context.Background()
	if _, err := cs.CoreV1().Pods(*ns).Get(ctx, names[0], metav1.GetOptions{}); err != nil {
		panic(err)
	}
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		first, _ := strconv.Atoi(f[1])
		count, _ := strconv.Atoi(f[2])
		for i := first; i < first+count; i++ {
			var err error
			switch f[0] {
			case "bind":
				err = cs.CoreV1().Pods(*ns).Bind(ctx, &corev1.Binding{
					ObjectMeta: metav1.ObjectMeta{Name: names[i], Namespace: *ns, UID: types.UID(uids[i])},
					Target:     corev1.ObjectReference{Kind: "Node", Name: *node},
				}, metav1.CreateOptions{})
			case "event":
				_, err = cs.EventsV1().Events(*ns).Create(ctx, &eventsv1.Event{
					ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", names[i], time.Now().UnixNano()), Namespace: *ns},
					EventTime:           metav1.NewMicroTime(time.Now()),
					ReportingController: "default-scheduler",
					ReportingInstance:   "default-scheduler-bench",
					Action:              "Binding",
					Reason:              "Scheduled",
					Type:                "Normal",
					Note:                fmt.Sprintf("Successfully assigned %s/%s to node-1", *ns, names[i]),
					Regarding:           corev1.ObjectReference{Kind: "Pod", Namespace: *ns, Name: names[i], UID: types.UID(uids[i]), APIVersion: "v1"},
				}, metav1.CreateOptions{})
			case "get":
				_, err = cs.CoreV1().Pods(*ns).Get(ctx, names[i], metav1.GetOptions{})
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, f[0], names[i], err)
				os.Exit(1)
			}
		}
		fmt.Println("ok", count)
	}
}
