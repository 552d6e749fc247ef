// nsinterop-go: the Go side of the interop suite (tests/interop/README.md).
// A producer and a push consumer of github.com/apache/rocketmq-client-go/v2
// against the name servers given on the command line.
//
//	nsinterop-go produce NAMESRV TOPIC PREFIX COUNT
//	nsinterop-go consume NAMESRV TOPIC GROUP PREFIX COUNT TIMEOUT_S
//
// NAMESRV is "host:port;host:port". produce prints SENT/FAILED per message
// and a SUMMARY; consume prints GOT per new body PREFIX-i and RECEIVED n of
// COUNT. Both exit 0 only if everything went through.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	rlog.SetLogLevel("warn")
	switch os.Args[1] {
	case "produce":
		if len(os.Args) != 6 {
			usage()
		}
		os.Exit(produce(os.Args[2], os.Args[3], os.Args[4], atoi(os.Args[5])))
	case "consume":
		if len(os.Args) != 8 {
			usage()
		}
		os.Exit(consume(os.Args[2], os.Args[3], os.Args[4], os.Args[5], atoi(os.Args[6]),
			time.Duration(atoi(os.Args[7]))*time.Second))
	}
	usage()
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: nsinterop-go produce NAMESRV TOPIC PREFIX COUNT | "+
		"consume NAMESRV TOPIC GROUP PREFIX COUNT TIMEOUT_S")
	os.Exit(2)
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		usage()
	}
	return n
}

func produce(ns, topic, prefix string, count int) int {
	p, err := rocketmq.NewProducer(
		producer.WithNameServer(strings.Split(ns, ";")),
		producer.WithGroupName("nsinterop_go_producer_"+prefix),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(5*time.Second),
	)
	if err == nil {
		err = p.Start()
	}
	if err != nil {
		fmt.Printf("producer start: %v\n", err)
		return 1
	}
	ok, failed := 0, 0
	for i := 0; i < count; i++ {
		body := fmt.Sprintf("%s-%d", prefix, i)
		msg := primitive.NewMessage(topic, []byte(body))
		msg.WithKeys([]string{body})
		msg.WithTag("tagA")
		r, err := p.SendSync(context.Background(), msg)
		if err != nil || r.Status != primitive.SendOK {
			failed++
			fmt.Printf("FAILED %d %v %v\n", i, err, r)
			continue
		}
		ok++
		fmt.Printf("SENT %d %s %d\n", i, r.MessageQueue.BrokerName, r.MessageQueue.QueueId)
	}
	fmt.Printf("SUMMARY sent=%d failed=%d\n", ok, failed)
	_ = p.Shutdown()
	if failed != 0 {
		return 1
	}
	return 0
}

func consume(ns, topic, group, prefix string, count int, timeout time.Duration) int {
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNameServer(strings.Split(ns, ";")),
		consumer.WithGroupName(group),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	)
	if err != nil {
		fmt.Printf("consumer: %v\n", err)
		return 1
	}
	var mu sync.Mutex
	got := map[string]bool{}
	err = c.Subscribe(topic, consumer.MessageSelector{}, func(ctx context.Context,
		msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			b := string(m.Body)
			if strings.HasPrefix(b, prefix+"-") && !got[b] {
				got[b] = true
				fmt.Printf("GOT %s queue=%d offset=%d\n", b, m.Queue.QueueId, m.QueueOffset)
			}
		}
		return consumer.ConsumeSuccess, nil
	})
	if err == nil {
		err = c.Start()
	}
	if err != nil {
		fmt.Printf("consumer start: %v\n", err)
		return 1
	}
	end := time.Now().Add(timeout)
	n := 0
	for time.Now().Before(end) {
		mu.Lock()
		n = len(got)
		mu.Unlock()
		if n >= count {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("RECEIVED %d of %d\n", n, count)
	_ = c.Shutdown()
	if n < count {
		return 1
	}
	return 0
}
