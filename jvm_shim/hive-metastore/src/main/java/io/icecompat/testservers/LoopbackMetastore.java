package io.icecompat.testservers;

import java.net.InetAddress;
import java.net.InetSocketAddress;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.IHMSHandler;
import org.apache.hadoop.hive.metastore.RetryingHMSHandler;
import org.apache.hadoop.hive.metastore.TSetIpAddressProcessor;
import org.apache.hadoop.hive.metastore.conf.MetastoreConf;
import org.apache.hadoop.hive.metastore.txn.TxnDbUtil;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.server.TServer;
import org.apache.thrift.server.TThreadPoolServer;
import org.apache.thrift.transport.TServerSocket;
import org.apache.thrift.transport.TTransportFactory;

/**
 * Hive's metastore service (the handler Hive's own server runs) on a Thrift socket bound to the
 * loopback address only, for the tests.
 *
 * <p>Hive 3.1's {@code HiveMetaStore} binds every interface and leaves the transaction tables that
 * table locks need to its schema tool; this starts the same handler behind a loopback socket after
 * creating those tables in the configured database. The configuration is read from
 * {@code metastore-site.xml} on the class path; the port is the only argument.
 */
public final class LoopbackMetastore {
  private LoopbackMetastore() {}

  public static void main(String[] args) {
    try {
      serve(Integer.parseInt(args[0]));
    } catch (Throwable failure) {
      // the handler's own threads would keep a failed start alive; the test waits on the exit
      failure.printStackTrace();
      System.exit(1);
    }
  }

  private static void serve(int port) throws Exception {
    Configuration conf = MetastoreConf.newMetastoreConf();
    // the lock, transaction and compaction tables (the DataNucleus schema does not include them)
    TxnDbUtil.prepDb(conf);
    HiveMetaStore.HMSHandler handler = new HiveMetaStore.HMSHandler("icecompat test metastore", conf, false);
    IHMSHandler retrying = RetryingHMSHandler.getProxy(conf, handler, false);
    TServerSocket socket = new TServerSocket(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
    TThreadPoolServer.Args serverArgs = new TThreadPoolServer.Args(socket)
        .processor(new TSetIpAddressProcessor<>(retrying))
        .transportFactory(new TTransportFactory())
        .protocolFactory(new TBinaryProtocol.Factory())
        .minWorkerThreads(2)
        .maxWorkerThreads(16);
    TServer server = new TThreadPoolServer(serverArgs);
    System.out.println("icecompat test metastore listening on 127.0.0.1:" + port);
    System.out.flush();
    server.serve();
  }
}
