"""rclpy side of the interop tests: the same roles and output as `interop_node`.

    python3 interop_rclpy.py --role talker|listener --type std|bench --topic T --count N
"""

import argparse
import json
import sys
import time

import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import String
from rclrs_tokio_msgs.msg import BenchMessage


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument('--role', required=True, choices=['talker', 'listener'])
    parser.add_argument('--type', default='std', choices=['std', 'bench'])
    parser.add_argument('--topic', default='interop')
    parser.add_argument('--count', type=int, default=10)
    parser.add_argument('--timeout-s', type=float, default=20.0)
    args = parser.parse_args()

    rclpy.init()
    node = rclpy.create_node(f'interop_rclpy_{args.role}')
    qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
    msg_type = String if args.type == 'std' else BenchMessage
    deadline = time.monotonic() + args.timeout_s
    try:
        if args.role == 'talker':
            pub = node.create_publisher(msg_type, args.topic, qos)
            while pub.get_subscription_count() == 0:
                if time.monotonic() > deadline:
                    print('no subscriber matched', file=sys.stderr)
                    return 2
                time.sleep(0.02)
            for seq in range(args.count):
                if args.type == 'std':
                    msg = String(data=f'hello {seq}')
                else:
                    msg = BenchMessage()
                    msg.header.seq = seq
                    msg.header.send_time_ns = time.monotonic_ns()
                    msg.payload = [seq % 256] * 16
                pub.publish(msg)
                time.sleep(0.01)
            time.sleep(0.5)
            print(json.dumps({'published': args.count}))
            return 0
        seen = []

        def record(msg):
            if args.type == 'std':
                seen.append(msg.data)
            else:
                ok = all(b == msg.header.seq % 256 for b in msg.payload)
                seen.append(f'{msg.header.seq}' + ('' if ok else ' (corrupt payload)'))

        node.create_subscription(msg_type, args.topic, record, qos)
        while len(seen) < args.count and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.05)
        print(json.dumps({'received': len(seen), 'first': seen[0] if seen else '',
                          'last': seen[-1] if seen else ''}))
        return 0 if len(seen) >= args.count else 1
    finally:
        node.destroy_node()
        rclpy.shutdown()


if __name__ == '__main__':
    sys.exit(main())
